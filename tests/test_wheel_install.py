"""A non-editable install, as a new user gets it: `python -m build` makes the sdist and the wheel
(the wheel from the sdist), the wheel and the example plug-in go into a fresh virtual environment,
and from a directory outside the checkout (no PYTHONPATH, no MIBENCH_DATA) the main job's short
form runs, `mibench list` shows the installed plug-in with its kind and source package,
`mibench.evaluate` ranks the plug-in on the quick suite against the baselines shipped in the wheel,
and `mibench report` writes its page from the packaged template and assets.

Slow (a fresh venv with torch: about 2-4 minutes); CI runs it as its own step:
`python -m pytest -q -m slow tests/test_wheel_install.py`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "mibench-example-plugin"
#: files the library reads at run time: they must be in the wheel
# every data file the package reads at run time, as the checkout holds them (the embedded subset's
# file names follow its encoder, so they are listed from the checkout, not by hand)
PACKAGE_DATA = sorted(
    {str(p.relative_to(REPO)) for p in (REPO / "mibench" / "data" / "embedded").iterdir()
     if p.suffix in (".npz", ".json")}
    | {"mibench/analysis/packaged/sample_leaderboard.json", "mibench/report/templates/index.html",
       "mibench/report/assets/site.js", "mibench/report/assets/site.css",
       "mibench/report/assets/vendor/tablesort.min.js", "mibench/report/assets/vendor/tablesort.LICENCE"})


def _run(cmd, *, cwd, env=None, timeout=900) -> subprocess.CompletedProcess:
    t0 = time.perf_counter()
    r = subprocess.run([str(c) for c in cmd], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=timeout)
    print(f"[{time.perf_counter() - t0:6.1f} s] {' '.join(map(str, cmd))[:160]}")
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.mark.slow
def test_wheel_works_without_the_checkout(tmp_path, packaged_baseline_estimators):
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--outdir", dist, REPO], cwd=tmp_path)
    wheel = next(dist.glob("mibench-*.whl"))
    assert next(dist.glob("mibench-*.tar.gz"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert not [f for f in PACKAGE_DATA if f not in names], sorted(n for n in names if not n.endswith(".py"))
    assert not [n for n in names if n.startswith(("results/", "tests/", "examples/"))]
    print(f"wheel {wheel.name}: {wheel.stat().st_size / 1e6:.1f} MB")

    example = tmp_path / "example-plugin"          # a copy: pip's in-tree build leaves the checkout clean
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    bin_ = venv / "bin"
    _run([bin_ / "python", "-m", "pip", "install", "--quiet", "torch==2.13.0", wheel, example], cwd=tmp_path)

    outside = tmp_path / "user"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "MIBENCH_DATA", "MIBENCH_SAMPLE_BASELINES", "VIRTUAL_ENV")}
    env.update(PATH=f"{bin_}{os.pathsep}{env.get('PATH', '')}", MIBENCH_CACHE=str(tmp_path / "cache"),
               MPLBACKEND="Agg", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")

    # the main job, short form
    run_dir = outside / "run"
    _run([bin_ / "mibench", "run", "--task", "gaussian", "--estimator", "smile", "--steps", "200", "--quiet",
          "--out", run_dir], cwd=outside, env=env)
    assert '"status": "complete"' in (run_dir / "config.json").read_text()
    assert (run_dir / "summary.csv").is_file() and (run_dir / "staircase.png").is_file()

    # the installed plug-in, its kind and its package
    out = _run([bin_ / "mibench", "list"], cwd=outside, env=env).stdout
    line = next((l for l in out.splitlines() if l.strip().startswith("example-gaussian")), None)
    assert line is not None, out
    assert "black-box" in line and "mibench-example-plugin 0.1.0" in line, line

    # evaluate on the quick suite, against the baselines shipped in the wheel
    code = ("import mibench, mibench.analysis.evaluate as ev\n"
            "from mibench_example_plugin import GaussianEstimator\n"
            "assert 'site-packages' in mibench.__file__, mibench.__file__\n"
            "board = mibench.evaluate(GaussianEstimator(), suite='quick', progress=False)\n"
            "print('BASELINES', ev.baseline_dir())\n"
            "print('ESTIMATORS', len(set(board['estimator'])))\n")
    out = _run([bin_ / "python", "-c", code], cwd=outside, env=env).stdout
    assert "mibench_example_plugin.estimators.GaussianEstimator ranks" in out, out
    n = len(packaged_baseline_estimators["gaussian"]) + 1         # ranked among every packaged gaussian baseline
    assert f"ESTIMATORS {n}" in out and f"of {n} " in out, out
    assert "mibench-baselines-" in out, out

    # the report page from the packaged template and assets
    _run([bin_ / "mibench", "report", run_dir, "-o", outside / "site"], cwd=outside, env=env)
    assert (outside / "site" / "index.html").is_file()
    assert (outside / "site" / "assets" / "vendor" / "tablesort.min.js").is_file()
