"""The report page in a real browser: headless Chromium (Debian's ``chromium`` + ``chromium-driver``,
driven by selenium) opens the page written for results/table3 + results/sample_leaderboard from
disk and checks that every setup's table renders with the leaderboard's rows, that clicking a
column heading sorts the rows by that column (both directions, numerically), that every figure
loaded, and that the console shows no errors; a full-page screenshot goes to the test's tmp dir.

Skipped, with the reason, where chromium / chromedriver / selenium are absent (.ci/run installs them).
"""
from __future__ import annotations

import base64
import math
import os
import shutil
from pathlib import Path

import pytest

from mibench.report.reading import SETUP_COLUMNS

CHROMIUM = os.environ.get("MIBENCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = os.environ.get("MIBENCH_CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
#: flags that keep Chromium off the (closed) network and out of the user's profile
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000"]


def _missing() -> str | None:
    if not Path(CHROMIUM).is_file():
        return f"no chromium at {CHROMIUM} (apt-get install chromium chromium-driver; .ci/run does)"
    if not Path(CHROMEDRIVER).is_file():
        return f"no chromedriver at {CHROMEDRIVER} (apt-get install chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def page(browser, report_site):
    site, board = report_site
    browser.get((site / "index.html").as_uri())
    browser.execute_script("return document.readyState")          # loaded (get() waits for onload)
    return browser, site, board


def _column(driver, table_id: str, key: str) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' tbody tr'))"
        ".map(r => r.querySelector('td[data-key=\"' + arguments[1] + '\"]'))"
        ".map(td => td.hasAttribute('data-sort') ? td.getAttribute('data-sort') : td.textContent.trim());",
        table_id, key)


def _num(s: str) -> float:
    return -math.inf if s == "" else float(s)          # the page's rule: a missing value sorts lowest


def test_tables_render_with_the_leaderboards_rows(page):
    driver, _, board = page
    counts = driver.execute_script(
        "return Array.from(document.querySelectorAll('table.leaderboard')).map(t => ["
        "t.getAttribute('data-setup'), t.tBodies[0].rows.length, t.getBoundingClientRect().height, "
        "t.getAttribute('data-sortable-ready')]);")
    cols = [c for c in SETUP_COLUMNS if c in board.columns]
    expected = sorted(board.groupby(cols, sort=False, dropna=False).size().tolist())
    assert sorted(n for _, n, _, _ in counts) == expected and len(counts) == len(expected) >= 6
    assert all(h > 100 and ready == "true" for _, _, h, ready in counts), counts   # laid out, sorter attached


def test_clicking_a_heading_sorts_the_rows(page):
    from selenium.webdriver.common.by import By

    driver, _, _ = page
    table = "table-" + driver.execute_script(
        "return Array.from(document.querySelectorAll('table.leaderboard'))"
        ".sort((a, b) => b.tBodies[0].rows.length - a.tBodies[0].rows.length)[0].getAttribute('data-setup');")
    before = _column(driver, table, "estimator")
    header = driver.find_element(By.CSS_SELECTOR, f"#{table} th[data-key='mse']")
    header.click()
    mse = [_num(v) for v in _column(driver, table, "mse")]
    assert mse == sorted(mse) and header.get_attribute("aria-sort") == "ascending"
    assert _column(driver, table, "estimator") != before          # the rows moved (rank order is not MSE order)
    header.click()
    mse = [_num(v) for v in _column(driver, table, "mse")]
    assert mse == sorted(mse, reverse=True) and header.get_attribute("aria-sort") == "descending"
    # a text column sorts alphabetically; the rows stay whole (estimator and its kind move together)
    pairs_before = sorted(zip(_column(driver, table, "estimator"), _column(driver, table, "true_mi")))
    driver.find_element(By.CSS_SELECTOR, f"#{table} th[data-key='estimator']").click()
    names = _column(driver, table, "estimator")
    assert names == sorted(names, key=str.lower)
    assert sorted(zip(names, _column(driver, table, "true_mi"))) == pairs_before


def test_every_figure_loaded(page):
    driver, _, _ = page
    imgs = driver.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]);")
    assert len(imgs) >= 27
    broken = [src for src, complete, width in imgs if not (complete and width > 0)]
    assert not broken, broken


def test_console_has_no_errors_and_a_screenshot_is_written(page, tmp_path):
    driver, _, _ = page
    logs = driver.get_log("browser")
    errors = [e for e in logs if e.get("level") in ("SEVERE", "ERROR")]
    assert not errors, errors
    # a full-page screenshot (Chrome DevTools: beyond the viewport)
    size = driver.execute_script("return [document.documentElement.scrollWidth, "
                                 "document.documentElement.scrollHeight];")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size[0], "height": min(size[1], 16000), "scale": 0.5}})
    path = tmp_path / "report.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    assert path.stat().st_size > 10_000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {path}")


def test_the_family_ranking_and_heatmap_render_and_sort(page):
    """The results span several data families (Gaussian, images, text), so the page opens with the
    per-family ranking: the heatmap loaded, one table per family with a row per estimator, sortable."""
    from selenium.webdriver.common.by import By

    driver, _, board = page
    families = driver.execute_script(
        "const s = document.getElementById('families'); if (!s) return null;"
        "const img = s.querySelector('figure.heatmap img');"
        "return [img.complete, img.naturalWidth, Array.from(s.querySelectorAll('h3')).map(h => h.textContent),"
        "Array.from(s.querySelectorAll('table.family')).map(t => t.tBodies[0].rows.length)];")
    assert families is not None, "no #families section"
    complete, width, headings, rows = families
    assert complete and width > 500
    assert {"Gaussian", "images", "text"} <= set(headings)
    sample = board[board["protocol"] == "sample"]
    assert max(rows) == sample[sample["task"] == "gaussian"]["estimator"].nunique()
    header = driver.find_element(By.CSS_SELECTOR, "#family-1 th:nth-child(7)")          # MAE (bits)
    header.click()
    mae = driver.execute_script("return Array.from(document.querySelectorAll('#family-1 tbody tr'))"
                                ".map(r => r.cells[6].getAttribute('data-sort'));")
    values = [_num(v) for v in mae]
    assert values == sorted(values)
