"""Run outputs that survive real use: file modes follow the umask, estimates.csv is appended per
logging block (a killed run keeps whole blocks), run_id / seed columns, ``mibench.load_runs``,
``mibench run --config`` re-runs a recorded run bit-exactly."""
import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import mibench
from mibench import records
from mibench.cli import main
from mibench.protocols.stream.run import RunConfig, run
from mibench.records import io as records_io

SMALL = dict(task="gaussian", task_params={"dim": 2}, hidden=8, layers=1, batch_size=16, device="cpu")
REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_written_files_follow_the_umask(tmp_path, mask):
    with umask(mask):
        assert records_io.current_umask() == mask
        records.write_text(tmp_path / "a.txt", "x")
        records.write_json(tmp_path / "b.json", {"a": 1})
        records.write_rows(tmp_path / "c.csv", [{"x": 1.0}], ["x"])
        with records.atomic_path(tmp_path / "d.bin") as tmp:
            tmp.write_bytes(b"1")
        log = records.EstimatesLog(tmp_path / "e.csv", ["nwj"], "joint", "r", 0).open()
        log.close()
    for name in ("a.txt", "b.json", "c.csv", "d.bin", "e.csv"):
        assert mode(tmp_path / name) == 0o666 & ~mask, name
    assert not list(tmp_path.glob(".*tmp"))


def test_a_run_directory_follows_the_umask(tmp_path):
    """Every file of a run directory (incl. the PNG and a leaderboard written from it)."""
    from mibench.analysis.leaderboard import build, write_all

    with umask(0o002):
        run(RunConfig(estimators=["smile"], steps=20, mi="1,2", **SMALL), out_dir=tmp_path / "r")
        write_all(*build([tmp_path / "r"]), tmp_path / "lb.csv")
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"config.json", "estimates.csv", "summary.csv", "staircase.png", "lb.csv",
                                       "lb.md", "lb.meta.json"}
    assert {p.name: mode(p) for p in files} == {p.name: 0o664 for p in files}


def legacy_lines(names, critic, true_mi, estimates):
    """estimates.csv as mibench wrote it before the per-block log (one write at the end)."""
    lines = ["step,estimator,critic,true_mi,estimate"]
    for name, est in zip(names, estimates):
        lines += [f"{s},{name},{critic},{t:.6g},{e:.6g}" for s, (t, e) in enumerate(zip(true_mi, est))]
    return lines


def test_estimates_appended_per_block_and_final_file_unchanged(tmp_path, monkeypatch):
    """After every logging block the file holds exactly the steps logged so far (whole lines);
    at the end it is today's file (estimator-major) plus the run_id and seed columns."""
    seen = []
    original = records.EstimatesLog.append

    def spy(self, true_mi, estimates, start, stop):
        original(self, true_mi, estimates, start, stop)
        text = self.path.read_text()
        assert text.endswith("\n")
        seen.append((start, stop, records.read_estimates(self.path)))

    monkeypatch.setattr(records.EstimatesLog, "append", spy)
    out = tmp_path / "r"
    res = run(RunConfig(estimators=["smile", "nwj"], steps=50, mi="1,2", log_every=20, seed=3, **SMALL), out_dir=out,
              plot=False)
    assert [(a, b) for a, b, _ in seen] == [(0, 20), (20, 40), (40, 50)]
    for _, stop, df in seen:
        assert len(df) == 2 * stop and sorted(set(df.step)) == list(range(stop))
        assert set(df.run_id) == {"r"} and set(df.seed) == {3}
    final = (out / "estimates.csv").read_text().splitlines()
    legacy = legacy_lines(res.names, "joint", res.true_mi, res.estimates)
    assert final[0] == "step,estimator,critic,true_mi,estimate,run_id,seed"
    assert [line.rsplit(",", 2)[0] for line in final[1:]] == legacy[1:]
    assert all(line.endswith(",r,3") for line in final[1:])
    df = records.read_estimates(out / "estimates.csv")
    np.testing.assert_allclose(df.estimate.to_numpy().reshape(2, 50), res.estimates, rtol=1e-5, atol=1e-6)


def test_a_diverged_estimator_is_logged_as_nan_from_its_step(tmp_path):
    out = tmp_path / "r"
    res = run(RunConfig(estimators=["nwj", "smile"], steps=40, mi="1", lr=1e3, log_every=10, **SMALL), out_dir=out,
              plot=False)
    assert res.diverged == {"nwj": 1}               # lr 1e3: NWJ's exp term overflows at once
    df = records.read_estimates(out / "estimates.csv")
    for name, e in df.groupby("estimator"):
        bad = np.flatnonzero(~np.isfinite(e.sort_values("step").estimate.to_numpy()))
        if name in res.diverged:
            assert bad.size and bad[0] == res.diverged[name] and np.all(np.diff(bad) == 1) and bad[-1] == 39
        else:
            assert bad.size == 0


def test_reader_drops_a_cut_last_line_and_reads_old_files(tmp_path):
    p = tmp_path / "estimates.csv"
    p.write_text("step,estimator,critic,true_mi,estimate,run_id,seed\n0,nwj,joint,2,1.5,r,0\n1,nwj,joint,2,1.2")
    df = records.read_estimates(p, partial_last_line=True)      # a run that did not finish: whole lines
    assert df.step.tolist() == [0] and df.estimate.tolist() == [1.5]
    with pytest.raises(mibench.errors.UnreadableInput, match="truncated"):     # a finished run's file: damaged
        records.read_estimates(p)
    p.write_text("step,estimator,critic,true_mi,estimate\n0,nwj,joint,2,1.5\n")
    df = records.read_estimates(p)
    assert list(df.columns) == records.STREAM_ESTIMATE_COLUMNS and df.run_id.isna().all()
    p.write_text("step,estimator,critic,true_mi,estimate,run_id,seed\n")
    assert len(records.read_estimates(p)) == 0


KILL_SCRIPT = """
import sys
from mibench.protocols.stream.run import RunConfig, run
run(RunConfig(task="gaussian", task_params={"dim": 2}, estimators=["smile", "dv"], hidden=8, layers=1, batch_size=16,
              device="cpu", steps=100_000, mi="2", log_every=25), out_dir=sys.argv[1], plot=False)
"""


def test_a_killed_run_keeps_whole_blocks(tmp_path):
    """SIGKILL (no chance to clean up) mid-training: estimates.csv holds whole 25-step blocks."""
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(out)], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    est = out / "estimates.csv"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if est.is_file() and len(est.read_bytes().splitlines()) > 1 + 2 * 25 * 3:
                break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
    recorded = json.loads((out / "config.json").read_text())
    assert recorded["status"] == "running" and recorded["writer"]["pid"] == proc.pid
    assert records.run_status(recorded) == "stale"          # its writer is gone
    data = est.read_bytes()
    assert data.endswith(b"\n")
    df = records.read_estimates(est)
    n = len(df) // 2
    assert len(df) % (2 * 25) == 0 and n >= 75
    for name in ("smile-5", "dv"):
        assert df[df.estimator == name].step.tolist() == list(range(n))
    assert np.isfinite(df.estimate).all()
    runs = mibench.load_runs(tmp_path)                  # a partial run is loadable, marked as such
    assert set(runs.status) == {"stale"} and len(runs) == len(df)
    assert main(["plot", str(out), "-o", str(tmp_path / "fig")]) == 0    # and plottable: the logged steps
    assert (tmp_path / "fig" / "staircase.png").read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "fig" / "metrics.png").exists()


def test_load_runs(tmp_path):
    a = run(RunConfig(estimators=["smile", "nwj"], steps=20, mi="1,2", seed=1, **SMALL), out_dir=tmp_path / "s" / "a",
            plot=False)
    # a run directory written before the run_id / seed columns (and config's run_id) existed
    old = tmp_path / "s" / "old"
    old.mkdir()
    cfg = json.loads((tmp_path / "s" / "a" / "config.json").read_text())
    cfg.pop("run_id")
    cfg.pop("files")                   # as old runs: no checksums recorded (its estimates.csv differs)
    cfg["config"]["seed"] = 7
    cfg["diverged"] = {"nwj": 12}
    (old / "config.json").write_text(json.dumps(cfg))
    (old / "summary.csv").write_text((tmp_path / "s" / "a" / "summary.csv").read_text())
    (old / "estimates.csv").write_text("\n".join(legacy_lines(a.names, "joint", a.true_mi, a.estimates)) + "\n")
    df = mibench.load_runs(tmp_path / "s")
    assert len(df) == 2 * 2 * 20
    assert list(df.columns[:7]) == records.STREAM_ESTIMATE_COLUMNS
    assert {"task", "task_params", "ds", "dr", "layers", "hidden", "batch_size", "lr", "steps", "schedule",
            "precision", "status", "diverged_step", "run_dir"} <= set(df.columns)
    by_run = df.groupby("run_id").agg(seed=("seed", "first"), n=("step", "size"), task=("task", "first"),
                                      params=("task_params", "first"), status=("status", "first"))
    assert by_run.to_dict("index") == {"a": {"seed": 1, "n": 40, "task": "gaussian", "params": "dim=2",
                                             "status": "complete"},
                                       "old": {"seed": 7, "n": 40, "task": "gaussian", "params": "dim=2",
                                               "status": "complete"}}
    assert df[(df.run_id == "old") & (df.estimator == "nwj")].diverged_step.unique().tolist() == [12]
    assert df[df.run_id == "a"].diverged_step.isna().all()
    # the same numbers as the arrays the run returned
    mine = df[df.run_id == "a"].pivot(index="estimator", columns="step", values="estimate").loc[a.names]
    np.testing.assert_allclose(mine.to_numpy(), a.estimates, rtol=1e-5, atol=1e-6)
    assert len(mibench.load_runs(tmp_path / "s" / "a")) == 40          # a single run directory
    with pytest.raises(mibench.MibenchError, match="no such run"):
        mibench.load_runs(tmp_path / "missing")


def test_load_runs_reads_committed_old_format_results():
    df = mibench.load_runs(REPO / "results" / "default_run")
    assert set(df.run_id) == {"default_run"} and set(df.seed) == {0} and set(df.status) == {"complete"}
    assert len(df) == 20_000 and df.groupby("true_mi").size().to_dict() == {v: 4000 for v in (2, 4, 6, 8, 10)}


def test_rerun_from_config_is_bit_identical(tmp_path, capsys, monkeypatch):
    """``mibench run --config`` trains the same numbers, bit for bit, and writes the same file."""
    import mibench.protocols.stream.run as harness

    cfg = RunConfig(estimators=["smile", "infonce"], steps=30, mi="1,2", seed=5, **SMALL)
    first = run(cfg, out_dir=tmp_path / "first", plot=False)
    reruns = []
    real_run = harness.run
    monkeypatch.setattr(harness, "run", lambda *a, **k: reruns.append(real_run(*a, **k)) or reruns[-1])
    assert main(["run", "--config", str(tmp_path / "first"), "--out", str(tmp_path / "cli"), "--quiet",
                 "--no-plot"]) == 0
    assert np.array_equal(first.estimates, reruns[0].estimates, equal_nan=True)
    a = (tmp_path / "first" / "estimates.csv").read_text().replace(",first,", ",X,")
    b = (tmp_path / "cli" / "estimates.csv").read_text().replace(",cli,", ",X,")
    assert a == b
    conf = json.loads((tmp_path / "cli" / "config.json").read_text())
    assert conf["rerun_of"] == {"config": str((tmp_path / "first" / "config.json").resolve()), "run_id": "first",
                                "overrides": {}}
    assert conf["config"] == json.loads((tmp_path / "first" / "config.json").read_text())["config"]


def test_rerun_flags_override_and_are_recorded(tmp_path, capsys):
    run(RunConfig(estimators=["smile"], steps=20, mi="1", seed=4, **SMALL), out_dir=tmp_path / "first", plot=False)
    # --seed 0 is the flag's default value: still an override, because it was given
    assert main(["run", "--config", str(tmp_path / "first" / "config.json"), "--seed", "0", "--steps", "10",
                 "--dim", "3", "--estimator", "nwj", "--out", str(tmp_path / "o"), "--quiet", "--no-plot"]) == 0
    conf = json.loads((tmp_path / "o" / "config.json").read_text())
    c = conf["config"]
    assert (c["seed"], c["steps"], c["task_params"], c["estimators"], c["hidden"]) == (0, 10, {"dim": 3}, ["nwj"], 8)
    assert conf["rerun_of"]["overrides"] == {"seed": 0, "steps": 10, "dim": 3, "estimator": "nwj"}


@pytest.mark.parametrize("content,match", [
    (None, "does not exist"),
    ("{not json", "not valid JSON"),
    ('{"a": 1}', "not a mibench run config"),
    ('{"config": {"task": "gaussian", "bogus": 1}}', "does not know: bogus"),
])
def test_rerun_bad_config_is_one_line(tmp_path, capsys, content, match):
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    assert main(["run", "--config", str(path), "--quiet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mibench: error: --config") and match in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_float_or_nan_and_slug():
    assert records_io.float_or_nan("1.5") == 1.5 and records_io.float_or_nan(2) == 2.0
    for v in (None, "", "abc", object()):
        assert records_io.float_or_nan(v) != records_io.float_or_nan(v)        # NaN
    assert records_io.slug("gaussian dim=4, joint+2") == "gaussian-dim-4-joint+2"
    assert records_io.slug("--A b--", allowed="A-Za-z0-9.", lower=True) == "a-b"
    assert records_io.slug("x" * 200, max_len=100) == "x" * 100


def test_load_runs_refuses_an_empty_path_and_warns_on_a_run_without_estimates(tmp_path):
    """load_runs('') read every run under the current directory, load_runs(None) was a TypeError, and a
    complete run without estimates.csv gave 0 rows without a word."""
    import shutil
    import warnings

    import mibench
    from mibench.errors import MibenchError

    for bad in ("", None, "  "):
        with pytest.raises(MibenchError, match="needs a run or sweep directory"):
            mibench.load_runs(bad)
    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[2] / "results" / "default_run", run)
    (run / "estimates.csv").unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(mibench.load_runs(run)) == 0
    assert any("without its estimates file" in str(w.message) for w in caught)
