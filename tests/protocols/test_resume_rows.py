"""A resumed streaming run never has fewer recorded rows than before (issue 34): a run interrupted
before its first checkpoint restarts at step 0, says so, and keeps every row estimates.csv logged,
through any number of interruptions; the finished file equals an uninterrupted run's."""
from __future__ import annotations

import pytest

from mibench.cli import main


def _rows(path) -> list[str]:
    """estimates.csv's whole data lines without run_id (the directory's name differs)."""
    data = path.read_text()
    lines = data[:data.rfind("\n") + 1].splitlines()[1:]
    return sorted(line.rsplit(",", 2)[0] + "," + line.rsplit(",", 1)[1] for line in lines)


def _stop_at(monkeypatch, step: int):
    """Ctrl-C before training step ``step`` (counted from the step the run starts at)."""
    import mibench.protocols.stream.training as training

    real, calls = training.check_stop, {"n": 0}

    def stop():
        calls["n"] += 1
        if calls["n"] == step + 1:
            raise KeyboardInterrupt
        real()

    monkeypatch.setattr(training, "check_stop", stop)
    return lambda: monkeypatch.setattr(training, "check_stop", real)


def test_resume_before_the_first_checkpoint_never_loses_rows(tmp_path, monkeypatch, capsys):
    from mibench.protocols.stream.run import RunConfig, prepare, run
    from mibench.records import read_config

    cfg = RunConfig(task="gaussian", task_params={"dim": 2}, estimators=["smile", "nwj"], hidden=8, layers=0,
                    batch_size=16, device="cpu", steps=300, mi="1,2", log_every=50)
    out = tmp_path / "part"
    undo = _stop_at(monkeypatch, 170)                 # 150 steps logged, no checkpoint (one a day)
    with pytest.raises(KeyboardInterrupt):
        run(prepare(cfg), out, plot=False, checkpoint_every=86400.0)
    undo()
    assert read_config(out)["status"] == "interrupted" and not (out / "checkpoint.pt").exists()
    first = _rows(out / "estimates.csv")
    assert len(first) == 2 * 150

    undo = _stop_at(monkeypatch, 120)                 # resumed at step 0, interrupted again before step 150
    with pytest.raises(KeyboardInterrupt):
        run(prepare(cfg), out, plot=False, resume=True, checkpoint_every=86400.0, progress=True)
    undo()
    assert "restarted at step 0" in capsys.readouterr().err      # the user is told, not just "resuming"
    assert _rows(out / "estimates.csv") == first                   # nothing shortened, nothing written twice

    res = run(prepare(cfg), out, plot=False, resume=True, checkpoint_every=86400.0)
    assert any("restarted at step 0" in n and "150 steps" in n for n in res.config["notes"])
    assert read_config(out)["status"] == "complete"
    whole = run(prepare(cfg), tmp_path / "whole", plot=False)
    assert _rows(out / "estimates.csv") == _rows(tmp_path / "whole" / "estimates.csv")
    assert (res.estimates == whole.estimates).all()


def test_cli_resume_without_a_checkpoint_says_it_restarts(tmp_path, monkeypatch, capsys):
    """Through ``mibench run --resume`` (not --quiet): the restart at step 0 is said on stderr."""
    args = ["run", "--task", "gaussian", "--dim", "2", "--hidden", "8", "--layers", "0", "--batch-size", "16",
            "--device", "cpu", "--no-plot", "--estimator", "smile", "--steps", "600", "--mi", "1,2",
            "--out", str(tmp_path / "r")]
    undo = _stop_at(monkeypatch, 520)               # two blocks of 250 logged, no checkpoint (one a minute)
    assert main(args) == 130
    undo()
    before = _rows(tmp_path / "r" / "estimates.csv")
    assert len(before) == 500
    capsys.readouterr()
    assert main([*args, "--resume"]) == 0
    err = capsys.readouterr().err
    assert "resuming" in err and "restarted at step 0" in err and "500 steps" in err
    after = _rows(tmp_path / "r" / "estimates.csv")
    assert len(after) == 600 and set(before) <= set(after)
