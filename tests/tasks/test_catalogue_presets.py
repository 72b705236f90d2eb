"""Catalogue presets (mibench/sweep/presets/catalogues.py): each catalogue under the sample protocol at its
authors' n and seeds, every fixed-MI task at its own level."""
import math

import pytest

from mibench.cli import main
from mibench.sweep.presets import PRESETS, load_preset
from mibench.tasks import make_task
from mibench.tasks.catalogue import catalogue_tasks


def test_bmi_presets_run_every_task_at_its_own_level():
    full = load_preset("bmi-v1", "full").cells()
    assert [c.config["task"] for c in full] == catalogue_tasks("bmi-v1")
    for c in full:
        assert c.config["protocol"] == "sample" and c.config["n"] == 5000 and c.config["seeds"] == list(range(10))
        assert c.config["mi"] == make_task(c.config["task"]).mi_bits
    quick = load_preset("bmi-v1", "quick").cells()
    assert len(quick) == 40 and quick[0].config["seeds"] == [0, 1] and quick[0].config["n"] == 5000
    v2 = load_preset("bmi-v2", "full").cells()
    assert {c.config["task"] for c in v2} == set(catalogue_tasks("bmi-v2")) and v2[0].config["seeds"] == [0, 1, 2]


def test_mutinfo_and_lee_rhee_presets():
    full = load_preset("mutinfo-images", "full").cells()
    images = [c for c in full if "channel" not in c.config["task"]]
    assert len(images) == 4 and all(c.config["n"] == 10_000 and c.config["seeds"] == list(range(42, 52)) for c in full)
    assert [round(v * math.log(2), 12) for v in images[0].config["mi"]] == [0.1, 1.0, 2.5, 5.0, 7.5, 10.0]
    assert {c.config["task"] for c in full} >= {"mutinfo-channel-mnist", "mutinfo-channel-cifar10"}
    lr = load_preset("lee-rhee", "full").cells()
    assert [c.config["task"] for c in lr] == ["gaussian", "vision", "text", "mixed"]
    assert lr[0].config["mi"] == [2.0, 4.0, 6.0, 8.0, 10.0]
    assert PRESETS["bmi-v1"]["section"] == "-" and set(PRESETS["bmi-v1"]) == {"section", "description", "quick", "full"}


def test_list_presets_and_dry_run(tmp_path, capsys):
    assert main(["sweep", "--list-presets"]) == 0
    out = capsys.readouterr().out
    assert "bmi-v1" in out and "quick: 40 cells x n = 5000, 2 seeds" in out
    assert main(["sweep", "--preset", "mutinfo-images", "--quick", "--dry-run", "--out", str(tmp_path / "m")]) == 0
    assert "5 cells (0 complete" in capsys.readouterr().out
    with pytest.raises(KeyError):
        PRESETS["bmi-v1"]["steps"]
