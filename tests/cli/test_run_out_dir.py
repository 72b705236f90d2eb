"""``--out`` a user can predict, resume for both protocols, and one-line errors (never a traceback)
for the ordinary mistakes a new user made (../shared/reports/new-user-defects.md, section 1)."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from mibench.cli import main

BASE = ["--task", "gaussian", "--dim", "2", "--device", "cpu", "--quiet", "--no-plot"]
TINY = [*BASE, "--hidden", "8", "--layers", "0", "--batch-size", "16"]        # the critics' sizes
STREAM = ["run", *TINY, "--estimator", "smile,nwj", "--steps", "60", "--mi", "1,2"]
SAMPLE = ["run", *BASE, "--estimator", "gaussian,ksg", "--n", "300", "--seeds", "0,1", "--mi", "1", "--timeout", "0"]


def one_line_error(capsys, code, *needles):
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("mibench: error:") and "Traceback" not in err, err
    for n in needles:
        assert n in err, err
    return err


def estimates_without_run_id(path: Path) -> list[str]:
    return [line.rsplit(",", 2)[0] + "," + line.rsplit(",", 1)[1] for line in path.read_text().splitlines()]


def test_out_naming_a_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("keep me")
    assert main([*STREAM, "--out", str(f)]) == 2
    one_line_error(capsys, 2, "is a file")
    assert f.read_text() == "keep me"


@pytest.fixture
def immutable_dir(tmp_path):
    d = tmp_path / "locked"
    d.mkdir()
    if shutil.which("chattr") and subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode == 0:
        yield d
        subprocess.run(["chattr", "-i", str(d)], check=True)
        return
    d.chmod(0o555)
    probe = d / "probe"
    try:
        probe.write_text("")
        probe.unlink()
        pytest.skip("cannot make an unwritable directory here (root without chattr)")
    except OSError:
        yield d
    finally:
        d.chmod(0o755)


def test_out_unwritable_and_below_it_are_one_line(immutable_dir, capsys):
    assert main([*STREAM, "--out", str(immutable_dir)]) == 2
    one_line_error(capsys, 2, str(immutable_dir))
    assert main([*STREAM, "--out", str(immutable_dir / "sub")]) == 2
    one_line_error(capsys, 2, "cannot create")


def test_an_existing_run_needs_resume_or_overwrite(tmp_path, capsys):
    out = tmp_path / "r"
    assert main([*STREAM, "--out", str(out)]) == 0
    first = (out / "summary.csv").read_text()
    capsys.readouterr()
    assert main([*STREAM, "--out", str(out)]) == 2                      # never overwritten without a word
    one_line_error(capsys, 2, "already holds this run", "--resume", "--overwrite")
    assert main([*STREAM, "--out", str(out), "--resume"]) == 0          # complete: nothing to do
    assert "nothing to do" in capsys.readouterr().out
    assert main([*STREAM[:-2], "--mi", "3", "--out", str(out)]) == 2    # a different run
    one_line_error(capsys, 2, "holds a different run", "mi", "--overwrite")
    assert main([*STREAM, "--out", str(out), "--overwrite"]) == 0
    assert (out / "summary.csv").read_text() == first                  # same seed, same numbers
    assert main([*STREAM, "--out", str(out), "--resume", "--overwrite"]) == 2


def test_training_flags_for_estimators_that_do_not_take_them_are_refused(tmp_path, capsys):
    """A sample run's --steps and critic sizes reach critic estimators only: with gaussian, ksg or doe-flow
    alone they were ignored (doe-flow trained its 2,000 steps with --steps -5, exit 0)."""
    assert main([*SAMPLE, "--hidden", "8", "--out", str(tmp_path / "a")]) == 2
    one_line_error(capsys, 2, "--hidden set a critic estimator's training", "gaussian, ksg use their own settings")
    one = ["run", *BASE, "--n", "300"]
    assert main([*one, "--estimator", "doe-flow", "--steps", "-5", "--out", str(tmp_path / "b")]) == 2
    one_line_error(capsys, 2, "doe-flow uses its own settings")
    assert main([*one, "--estimator", "infonce", "--steps", "0", "--out", str(tmp_path / "c")]) == 2
    one_line_error(capsys, 2, "--steps must be >= 1")
    assert not any((tmp_path / d).exists() for d in "abc")


def test_the_two_protocols_never_share_a_directory(tmp_path, capsys):
    out = tmp_path / "r"
    assert main([*SAMPLE, "--out", str(out)]) == 0
    assert main([*STREAM, "--out", str(out)]) == 2
    one_line_error(capsys, 2, "holds a different run")
    assert main([*STREAM, "--out", str(out), "--overwrite"]) == 0
    assert not (out / "sample_estimates.csv").exists() and (out / "estimates.csv").is_file()
    assert main(["plot", str(out)]) == 0
    assert (out / "staircase.png").is_file() and not (out / "estimates.png").exists()


def test_default_out_directories_are_unique(tmp_path):
    from mibench.records import unique_dir

    name = "gaussian_smile_s0_20261124-120000"
    a, b = unique_dir(tmp_path, name), unique_dir(tmp_path, name)
    assert a != b and a.is_dir() and b.name.endswith("-2")


def test_stream_resume_gives_the_uninterrupted_numbers(tmp_path, monkeypatch, capsys):
    """Interrupted after a checkpoint, resumed: estimates.csv and summary.csv equal an uninterrupted
    run's (bit for bit, run_id aside)."""
    import mibench.protocols.stream.training as training
    from mibench.protocols.stream.run import RunConfig, prepare, run
    from mibench.records import read_config

    args = [*STREAM[:-4], "--steps", "300", "--mi", "1,2"]
    assert main([*args, "--out", str(tmp_path / "whole")]) == 0
    cfg = RunConfig(task="gaussian", task_params={"dim": 2}, estimators=["smile", "nwj"], hidden=8, layers=0,
                    batch_size=16, device="cpu", steps=300, mi="1,2", log_every=250)
    cfg.log_every = 50
    calls = {"n": 0}
    real = training.check_stop

    def stop_at_step_170():
        calls["n"] += 1
        if calls["n"] == 171:
            raise KeyboardInterrupt
        real()

    monkeypatch.setattr(training, "check_stop", stop_at_step_170)
    with pytest.raises(KeyboardInterrupt):
        run(prepare(cfg), tmp_path / "part", plot=False, checkpoint_every=0)
    monkeypatch.setattr(training, "check_stop", real)
    assert read_config(tmp_path / "part")["status"] == "interrupted"
    assert (tmp_path / "part" / "checkpoint.pt").is_file()
    res = run(prepare(cfg), tmp_path / "part", plot=False, resume=True)
    assert res.config["resumed"] and not (tmp_path / "part" / "checkpoint.pt").exists()
    whole = run(prepare(cfg), tmp_path / "whole-lib", plot=False)
    assert (tmp_path / "part" / "summary.csv").read_text() == (tmp_path / "whole-lib" / "summary.csv").read_text()
    assert estimates_without_run_id(tmp_path / "part" / "estimates.csv") == \
        estimates_without_run_id(tmp_path / "whole-lib" / "estimates.csv")
    assert (res.estimates == whole.estimates).all()


@pytest.mark.parametrize("mi", [1.0, 1 / math.log(2)])
def test_sample_resume_keeps_what_was_estimated(tmp_path, monkeypatch, mi):
    """At 1 nat (1.4426950408889634 bits, written as 1.442695) a resumed run made its kept estimates again
    and wrote a second row of each, which the next reading refused as a damaged file (the reference sweep's
    image cells, whose levels are 1, 2.5 and 5 nats)."""
    import mibench.protocols.sample.run as sample_run
    from mibench.records import read_config, read_sample_estimates

    cfg = sample_run.SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=["gaussian", "ksg"], mi=mi,
                                  n=300, seeds=[0, 1], timeout=None)
    whole = sample_run.run_sample(cfg, tmp_path / "whole", plot=False)
    real, calls = sample_run.estimate_once, {"n": 0, "stop_at": 3}

    def interrupted(*a, **k):
        calls["n"] += 1
        if calls["n"] == calls["stop_at"]:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(sample_run, "estimate_once", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sample_run.run_sample(cfg, tmp_path / "part", plot=False)
    assert read_config(tmp_path / "part")["status"] == "interrupted"
    assert len(read_sample_estimates(tmp_path / "part" / "sample_estimates.csv")) == 2
    calls.update(n=0, stop_at=None)
    sample_run.run_sample(cfg, tmp_path / "part", plot=False, resume=True)
    assert calls["n"] == 2                                           # only the two estimates not yet made
    keep = ("estimator", "seed", "true_mi", "estimate", "status")
    part, full = (read_sample_estimates(tmp_path / d / "sample_estimates.csv") for d in ("part", "whole"))
    assert [{k: r[k] for k in keep} for r in part] == [{k: r[k] for k in keep} for r in full]
    assert len(whole.rows) == 4
    part_sum, full_sum = ([r.split(",")[:4] for r in (tmp_path / d / "summary.csv").read_text().splitlines()]
                          for d in ("part", "whole"))
    assert part_sum == full_sum and len(part_sum) == 3         # one row per estimator and level, not split


@pytest.mark.parametrize("args,needle", [
    (["--seed", "99999999999999999999999"], "--seed"),
    (["--burn-in", "100", "--steps", "50"], "--burn-in 100"),
    (["--n", "500", "--seeds", "3-1", "--estimator", "ksg"], "runs backwards"),
    (["--n", "50", "--estimator", "smile"], "at least 100 pairs"),
    (["--stpes", "20"], "unrecognized arguments"),
    (["--out", ""], "--out is empty"),             # was: the default results/runs/... silently
    (["--n", "500", "--seeds", "0", "--estimator", "ksg", "--mi", "1.4426950408889634,1.4426951"],
     "same to six decimals"),                       # was: two rows the records could not tell apart
])
def test_ordinary_mistakes_are_one_line(args, needle, capsys):
    try:
        code = main(["run", "--task", "gaussian", "--device", "cpu", "--quiet", *args])
    except SystemExit as exc:          # argparse's own errors exit 2 after printing the usage
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err, err
    if "unrecognized" in needle:
        assert "usage: mibench run" in err             # the subcommand's usage, not the top-level one


def test_sample_run_with_few_pairs_and_a_black_box_estimator_runs(tmp_path):
    assert main(["run", "--task", "gaussian", "--dim", "2", "--estimator", "ksg", "--n", "50", "--seeds", "0",
                 "--timeout", "0", "--mi", "1", "--quiet", "--no-plot", "--out", str(tmp_path / "k")]) == 0


@pytest.mark.parametrize("field,value,needle", [
    ("steps", "abc", "steps must be an integer"),
    ("lr", "fast", "lr must be a number"),
    ("task_params", {"dim": "x"}, "parameter 'dim' must be an integer"),
])
def test_config_json_of_the_wrong_type_is_one_line(tmp_path, capsys, field, value, needle):
    out = tmp_path / "r"
    assert main([*STREAM, "--out", str(out)]) == 0
    conf = json.loads((out / "config.json").read_text())
    conf["config"][field] = value
    (out / "config.json").write_text(json.dumps(conf))
    capsys.readouterr()
    assert main(["run", "--config", str(out), "--out", str(tmp_path / "again"), "--quiet"]) == 2
    one_line_error(capsys, 2, needle)


def test_config_of_a_sample_run_reruns_it(tmp_path):
    assert main([*SAMPLE, "--out", str(tmp_path / "s")]) == 0
    assert main(["run", "--config", str(tmp_path / "s"), "--out", str(tmp_path / "again"), "--quiet",
                 "--no-plot"]) == 0
    a = json.loads((tmp_path / "s" / "config.json").read_text())
    b = json.loads((tmp_path / "again" / "config.json").read_text())
    assert b["protocol"] == "sample" and b["config"] == a["config"] and b["rerun_of"]["run_id"] == "s"


def test_config_of_a_sample_run_takes_training_flags_and_drops_those_nothing_takes(tmp_path, capsys):
    """--steps next to --config of a sample run was refused ('not part of its config'), though the config holds
    it (estimate_kwargs) and the flags next to --config override it; a re-run with --estimator ksg alone kept
    the critic's recorded steps, which the same flags typed for ksg alone refuse."""
    assert main(["run", "--task", "gaussian", "--dim", "2", "--estimator", "infonce,ksg", "--mi", "1", "--n", "300",
                 "--seeds", "0", "--steps", "30", "--timeout", "0", "--quiet", "--no-plot",
                 "--out", str(tmp_path / "s")]) == 0
    conf = lambda d: json.loads((tmp_path / d / "config.json").read_text())     # noqa: E731
    assert conf("s")["config"]["estimate_kwargs"] == {"steps": 30}
    assert main(["run", "--config", str(tmp_path / "s"), "--steps", "40", "--out", str(tmp_path / "more"), "--quiet",
                 "--no-plot"]) == 0
    assert conf("more")["config"]["estimate_kwargs"] == {"steps": 40}
    assert conf("more")["rerun_of"]["overrides"] == {"steps": 40}
    assert main(["run", "--config", str(tmp_path / "s"), "--estimator", "ksg", "--out", str(tmp_path / "ksg"),
                 "--quiet", "--no-plot"]) == 0
    assert conf("ksg")["config"]["estimate_kwargs"] == {}
    capsys.readouterr()
    assert main(["run", "--config", str(tmp_path / "s"), "--estimator", "ksg", "--steps", "40",
                 "--out", str(tmp_path / "no"), "--quiet", "--no-plot"]) == 2
    assert "set a critic estimator's training" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--workers", "--threads"])
def test_sweep_workers_and_threads_below_one_are_refused(tmp_path, capsys, flag):
    assert main(["sweep", "--task", "gaussian", "--steps", "10", flag, "0", "--out", str(tmp_path / "s")]) == 2
    one_line_error(capsys, 2, f"{flag} must be an integer >= 1")


def test_a_task_is_recorded_by_its_registry_name(tmp_path):
    """Names are matched ignoring case and spaces but were recorded as typed: three seeds of one BMI task, one
    typed in capitals, made two leaderboard rows, and compare called the other 'missing'."""
    import json

    for typed, name in (("1V1-NORMAL-0.75", "1v1-normal-0.75"), ("MIX-2X2", "mix-2x2"), (" Gaussian ", "gaussian")):
        out = tmp_path / name
        assert main(["run", "--task", typed, "--estimator", "ksg", "--n", "300", "--seeds", "0", "--quiet",
                     "--no-plot", "--out", str(out)]) == 0
        assert json.loads((out / "config.json").read_text())["config"]["task"] == name


def test_a_default_mi_the_task_cannot_hold_says_it_was_the_default(tmp_path, capsys):
    """'requested 4 bits' when the user gave no --mi: the 4 came from the default."""
    assert main(["run", "--task", "gaussian", "--dim", "1", "--n", "300",
                 "--estimator", "ksg", "--mi", "20", "--quiet", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "requested 20 bits" in err and "at most 16 bits" in err and "default" not in err, err
    assert main(["run", "--task", "mutinfo-channel-mnist", "--n", "300", "--estimator", "ksg", "--quiet",
                 "--out", str(tmp_path / "b")]) == 2
    one_line_error(capsys, 2, "requested 4 bits, the default when --mi is left out")
