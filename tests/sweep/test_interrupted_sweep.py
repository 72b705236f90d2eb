"""An interrupted sweep records each cell as its run directory holds it (issue 34): a cell that
completed stays complete, one never started stays pending, one stopped mid-way is interrupted; the
report page counts the cells from their directories and says which runs it left out of the ranking."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import mibench.protocols.stream.training as stream_training
import mibench.sweep.execute as execute
from mibench.errors import Terminated
from mibench.records import read_config
from mibench.sweep import SweepSpec, run_sweep
from mibench.sweep.plan import cell_status

TINY = {"tasks": [{"task": "gaussian", "params": {"dim": 2}}], "estimators": ["smile-5"], "seeds": [0, 1, 2, 3],
        "steps": 30, "hidden": 8, "layers": 0, "batch_size": 16, "mi": "1,2", "device": "cpu"}


def _manifest(out) -> dict:
    return json.loads((out / "sweep.json").read_text())


def _statuses(out) -> dict:
    return {c["config"]["seed"]: c["status"] for c in _manifest(out)["cells"]}


def _interrupt(tmp_path, monkeypatch):
    """A 4-cell sweep (in this process) and its two interruptions: SIGTERM lands after cell 1 wrote
    ``complete`` but before the driver read its result; then, resumed, at step 10 of cell 2."""
    out, spec = tmp_path / "sw", SweepSpec.from_dict(TINY)
    real = execute.execute_cell

    def term_after_seed_1(config, *a, **k):
        res = real(config, *a, **k)
        if config["seed"] == 1:
            raise Terminated("SIGTERM")
        return res

    monkeypatch.setattr(execute, "execute_cell", term_after_seed_1)
    with pytest.raises(Terminated):
        run_sweep(spec, out, workers=1, plot=False, log=lambda s: None)
    monkeypatch.setattr(execute, "execute_cell", real)
    first = _manifest(out)
    calls, check = {"n": 0}, stream_training.check_stop

    def term_at_step_10():
        calls["n"] += 1
        if calls["n"] == 11:
            raise Terminated("SIGTERM")
        check()

    monkeypatch.setattr(stream_training, "check_stop", term_at_step_10)
    with pytest.raises(Terminated):
        run_sweep(spec, out, resume=True, workers=1, plot=False, log=lambda s: None)
    monkeypatch.setattr(stream_training, "check_stop", check)
    return out, spec, first


def test_an_interrupted_sweep_keeps_each_cells_own_status(tmp_path, monkeypatch):
    out, spec, first = _interrupt(tmp_path, monkeypatch)
    assert first["status"] == "interrupted"
    assert {c["config"]["seed"]: c["status"] for c in first["cells"]} == \
        {0: "complete", 1: "complete", 2: "pending", 3: "pending"}
    assert first["counts"]["complete"] == 2 and first["counts"]["pending"] == 2 and "interrupted" not in first["counts"]
    assert _statuses(out) == {0: "complete", 1: "complete", 2: "interrupted", 3: "pending"}
    for c in spec.cells():       # the manifest says what each run directory says
        assert cell_status(out / c.name) in (_statuses(out)[c.config["seed"]], None)
    assert read_config(out / spec.cells()[2].name)["status"] == "interrupted"
    res = run_sweep(spec, out, resume=True, workers=1, plot=False, log=lambda s: None)
    assert (res.ran, res.skipped) == (2, 2) and _manifest(out)["counts"]["complete"] == 4


def test_the_report_counts_cells_from_their_directories_and_names_interrupted_runs(tmp_path, monkeypatch, capsys):
    from mibench.cli import main
    from mibench.report import write_site

    out, spec, _ = _interrupt(tmp_path, monkeypatch)
    m = _manifest(out)                  # as an older driver wrote it: every cell interrupted
    for c in m["cells"]:
        c["status"] = "interrupted"
    m["counts"] = {"interrupted": 4, "diverged": 0}
    (out / "sweep.json").write_text(json.dumps(m))
    html = write_site([out], tmp_path / "site", figures=False).read_text()
    assert "1 run interrupted, excluded from the ranking" in html
    assert spec.cells()[2].name in html
    assert "complete 2, interrupted 1, pending 1" in html and "interrupted 4" not in html
    capsys.readouterr()
    assert main(["report", str(out), "-o", str(tmp_path / "site2"), "--no-figures"]) == 0
    err = capsys.readouterr().err
    assert f"skipping incomplete run {out / spec.cells()[2].name} (interrupted" in err
    assert main(["leaderboard", str(out)]) == 0        # the leaderboard notes it too
    assert "skipping incomplete run" in capsys.readouterr().err


def test_sigterm_to_a_sweep_process_leaves_complete_cells_complete(tmp_path):
    """The real signal, end to end: ``mibench sweep`` on two worker processes terminated after its
    first cell (the cells queued on the pool that never started stay pending)."""
    out = tmp_path / "sw"
    cmd = [sys.executable, "-m", "mibench.cli", "sweep", "--task", "gaussian", "--set", "dim=2", "--estimator", "smile",
           "--seeds", "0-5", "--steps", "400", "--hidden", "8", "--layers", "0", "--batch-size", "16",
           "--device", "cpu", "--workers", "2", "--threads", "1", "--no-plot", "--no-leaderboard", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.time() + 240
    try:
        while time.time() < deadline and proc.poll() is None:
            try:
                if _manifest(out)["counts"].get("complete", 0) >= 1:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    m = _manifest(out)
    assert m["status"] == "interrupted" and m["counts"].get("complete", 0) >= 1
    for c in m["cells"]:
        on_disk = cell_status(out / c["dir"])
        assert c["status"] == (on_disk or "pending"), (c["name"], c["status"], on_disk)
