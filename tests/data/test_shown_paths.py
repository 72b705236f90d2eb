"""Run records name data folders relative to ``$MIBENCH_DATA`` / ``$MIBENCH_CACHE`` (committed records
must not carry one machine's absolute paths: ``tests/test_no_checkout_paths.py``)."""
from __future__ import annotations

from mibench.data.sources import shown_path


def test_paths_under_the_data_and_cache_folders_are_written_relative(tmp_path, monkeypatch):
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    cache.mkdir()
    monkeypatch.setenv("MIBENCH_DATA", str(data))
    monkeypatch.setenv("MIBENCH_CACHE", str(cache))
    assert shown_path(data / "mnist") == "$MIBENCH_DATA/mnist"
    assert shown_path(data) == "$MIBENCH_DATA"
    assert shown_path(cache / "embeddings" / "x.npz") == "$MIBENCH_CACHE/embeddings/x.npz"
    assert shown_path(tmp_path / "elsewhere") == str(tmp_path / "elsewhere")


def test_a_vision_task_records_its_data_relative_to_mibench_data(monkeypatch):
    import os

    import pytest

    if not os.environ.get("MIBENCH_DATA"):
        pytest.skip("needs the full data (MIBENCH_DATA)")
    from mibench.tasks import make_task

    source = make_task("vision").info()["data_source"]
    assert "$MIBENCH_DATA/mnist" in source and os.environ["MIBENCH_DATA"] not in source
