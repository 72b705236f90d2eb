"""An interrupted sweep records each cell as its run directory holds it (issue 34): a cell that
completed stays complete, one never started stays pending, one stopped mid-way is interrupted; the
report page counts the cells from their directories and says which runs it left out of the ranking."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mibench.protocols.stream.training as stream_training
import mibench.sweep.execute as execute
from mibench.errors import Terminated
from mibench.records import read_config
from mibench.sweep import SweepSpec, run_sweep
from mibench.sweep.plan import cell_status
from mibench.sweep.progress import record_killed

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


# ------------------------------------------------------------------ SIGTERM: one policy, runs and sweeps

STALLING = '''
import os
import time


class Stalling:
    """1 nat at once, except for seed 1 while the file $MIBENCH_TEST_STALL exists: then it marks
    itself in flight (a file beside it) and waits for the file to go (at most 5 minutes)."""

    kind = "black-box"

    def estimate(self, x, y, seed=0):
        stall = os.environ.get("MIBENCH_TEST_STALL", "")
        if seed == 1 and stall and os.path.exists(stall):
            open(f"{stall}.in-flight.{os.getpid()}", "w").close()
            t0 = time.time()
            while os.path.exists(stall) and time.time() - t0 < 300:
                time.sleep(0.05)
        return 1.0
'''


def _stalling(tmp_path) -> tuple[dict, object]:
    """(the environment that finds the stalling estimator and stalls it, the stall file)."""
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "stalling_est.py").write_text(STALLING)
    stall = tmp_path / "stall"
    stall.write_text("")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "plug"), os.environ.get("PYTHONPATH", "")]),
           "MIBENCH_TEST_STALL": str(stall), "OMP_NUM_THREADS": "1"}
    return env, stall


def _terminate_when_in_flight(cmd, env, stall, in_flight: int, manifest: Path | None = None) -> tuple[int, str, float]:
    """Start ``mibench cmd``, send SIGTERM once ``in_flight`` estimates are stalled mid-way, or as many as
    the sweep's workers where its ``manifest`` (sweep.json) says fewer: a busy machine runs fewer workers
    than asked, since they never oversubscribe the free cores; (exit code, stderr, seconds from the signal
    to the exit)."""
    proc = subprocess.Popen([sys.executable, "-m", "mibench.cli", *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None:
            if manifest is not None and manifest.is_file():
                try:
                    in_flight = min(in_flight, int(json.loads(manifest.read_text())["workers"]))
                except (ValueError, KeyError):      # written meanwhile: read it again next time
                    pass
            if len(list(stall.parent.glob(f"{stall.name}.in-flight.*"))) >= in_flight:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        return proc.returncode, err, time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_sigterm_mid_estimate_ends_every_started_sample_cell_interrupted(tmp_path):
    """A real sweep of sample cells terminated while their estimates are in flight: the cells stop at
    once (not after their estimate, nor killed by the driver after its 20 s), every started cell is
    ``interrupted`` in sweep.json and in its own config.json, and --resume finishes them, keeping
    the estimates they had made."""
    env, stall, workers = *_stalling(tmp_path), 2
    out = tmp_path / "sw"
    cmd = ["sweep", "--task", "gaussian", "--set", "dim=2,3", "--estimator", "stalling_est:Stalling", "--n", "100",
           "--seeds", "0,1", "--workers", str(workers), "--threads", "1", "--no-plot", "--no-leaderboard",
           "--out", str(out)]
    code, err, seconds = _terminate_when_in_flight(cmd, env, stall, in_flight=workers, manifest=out / "sweep.json")
    assert code == 143, err
    assert seconds < execute.STOP_WORKERS_SECONDS / 2, seconds
    m = _manifest(out)
    started = [c for c in m["cells"] if (out / c["dir"] / "config.json").is_file()]
    assert m["status"] == "interrupted" and 1 <= len(started) == m["workers"] <= workers
    slice_ = m["invocations"][-1]          # the stopped invocation keeps its wall time
    assert slice_["stopped"] is True and 0 < slice_["wall_seconds"] < 300 and slice_["completed"] == 0
    assert slice_["ran"] == len(m["cells"])
    for c in m["cells"]:
        if c in started:
            assert c["status"] == "interrupted" and read_config(out / c["dir"])["status"] == "interrupted", c
            assert (out / c["dir"] / "sample_estimates.csv").read_text().count("\n") == 2    # header + seed 0
        else:
            assert c["status"] == "pending"
    kept = {c["dir"]: (out / c["dir"] / "sample_estimates.csv").read_text().splitlines()[1] for c in started}
    stall.unlink()
    p = subprocess.run([sys.executable, "-m", "mibench.cli", *cmd, "--resume"], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    m = _manifest(out)
    assert m["status"] == "complete" and {c["status"] for c in m["cells"]} == {"complete"}
    assert m["invocations"][-1]["stopped"] is False and m["invocations"][-1]["completed"] == len(m["cells"])
    for c in m["cells"]:
        assert read_config(out / c["dir"])["status"] == "complete"
        rows = (out / c["dir"] / "sample_estimates.csv").read_text().splitlines()
        assert len(rows) == 3 and rows[1] == kept.get(c["dir"], rows[1])


def test_sigterm_mid_estimate_stops_a_single_sample_run_at_once(tmp_path):
    """The same policy for a run: SIGTERM while an estimate is in flight stops it at once (it waited
    for the estimate), config.json says interrupted, exit 143; --resume finishes it."""
    env, stall = _stalling(tmp_path)
    out = tmp_path / "r"
    cmd = ["run", "--task", "gaussian", "--dim", "2", "--estimator", "stalling_est:Stalling", "--n", "100",
           "--seeds", "0,1", "--mi", "1", "--no-plot", "--quiet", "--out", str(out)]
    code, err, seconds = _terminate_when_in_flight(cmd, env, stall, in_flight=1)
    assert code == 143 and seconds < 10, (code, seconds, err)
    assert read_config(out)["status"] == "interrupted"
    stall.unlink()
    p = subprocess.run([sys.executable, "-m", "mibench.cli", *cmd, "--resume"], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0 and read_config(out)["status"] == "complete", p.stderr


def test_one_place_installs_the_sigterm_handler():
    """One policy: only mibench.protocols.runtime.sigterm_requests_stop installs a SIGTERM handler
    (a run's and a sweep driver's alike)."""
    import ast

    import mibench

    installers = []
    for path in Path(mibench.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("signal.signal", "signal"):
                installers.append(path.name)
    assert installers and set(installers) == {"runtime.py"}, installers


def test_a_sweep_driver_and_its_cells_share_the_stop_request(tmp_path, monkeypatch):
    """In the driver's process (``workers=1``) the cell's run finds the driver's handler installed and
    keeps it: a real SIGTERM is one stop request, honoured by the run at its next step; the run and
    the manifest say interrupted and the default handler is back afterwards."""
    from mibench.protocols import runtime

    seen = []
    real = execute.execute_cell

    def cell(config, *a, **k):
        seen.append(signal.getsignal(signal.SIGTERM))
        if seen[-1] is runtime._request_stop:      # never a SIGTERM that nothing would catch
            os.kill(os.getpid(), signal.SIGTERM)
        return real(config, *a, **k)

    monkeypatch.setattr(execute, "execute_cell", cell)
    spec, out = SweepSpec.from_dict({**TINY, "seeds": [0, 1]}), tmp_path / "sw"
    with pytest.raises(Terminated):
        run_sweep(spec, out, workers=1, plot=False, log=lambda s: None)
    assert seen == [runtime._request_stop] and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert not runtime.STOP.requested
    assert _statuses(out) == {0: "interrupted", 1: "pending"} and _manifest(out)["status"] == "interrupted"
    assert read_config(out / spec.cells()[0].name)["status"] == "interrupted"


def test_a_cell_killed_before_it_recorded_its_stop_is_recorded_interrupted(tmp_path):
    """An estimate that runs in the worker's own process (``--timeout 0``) cannot stop mid-way, so the
    driver kills its worker after STOP_WORKERS_SECONDS: the driver then records that run
    ``interrupted`` in its config.json (its writer is dead); a run whose writer lives is left alone."""
    import socket

    from fake_runs import write_fake_run

    rows = [{"estimator": "nwj", "true_mi": 2.0, "bias": -0.5, "variance": 0.01, "mse": 0.26}]
    killed, alive = (write_fake_run(tmp_path / name, rows, status="running") for name in ("killed", "alive"))
    for d, pid in ((killed, 2**22 + 7), (alive, os.getpid())):
        cfg = read_config(d)
        cfg["writer"] = {"host": socket.gethostname(), "pid": pid}
        (d / "config.json").write_text(json.dumps(cfg))
    record_killed(killed)
    record_killed(alive)
    cfg = read_config(killed)
    assert cfg["status"] == "interrupted" and "writer" not in cfg and cell_status(killed) == "interrupted"
    assert read_config(alive)["status"] == "running"


KILLER = '''
import os
import signal
import time


class Killer:
    """1 nat, after a moment; on a 3-column x with seed 1 it kills the sweep's worker process (the parent
    of the estimate worker it runs in), as the OOM killer would."""

    kind = "black-box"

    def estimate(self, x, y, seed=0):
        if seed == 1 and x.shape[1] == 3:
            os.kill(os.getppid(), signal.SIGKILL)
            time.sleep(30)
        time.sleep(1.0)
        return 1.0
'''


def test_a_killed_worker_process_fails_its_own_cell_only(tmp_path, monkeypatch):
    """A sweep worker killed mid-cell (SIGKILL: the OOM killer) broke the whole pool, and every cell not
    yet returned was recorded failed, started or not.  Now the cell whose worker died is failed (with
    failed.json), the others run on a fresh pool, sweep.json shows the cells running while they run, and
    --resume finishes the failed cell."""
    import threading

    from mibench.utils.threads import LoadProbe

    plug = tmp_path / "plug"
    plug.mkdir()
    (plug / "killer_est.py").write_text(KILLER)
    monkeypatch.syspath_prepend(str(plug))
    monkeypatch.setattr(LoadProbe, "busy_cores", lambda self, min_window=0: 0.0)   # two workers on a busy machine
    out = tmp_path / "sw"
    spec = SweepSpec.from_dict({"tasks": [{"task": "gaussian", "params": {"dim": [2, 3, 4, 5]}}],
                                "estimators": ["killer_est:Killer"], "n": 100,
                                "seeds": [0, 1], "mi": 1})
    seen, done = set(), threading.Event()

    def watch():
        while not done.is_set():
            with contextlib.suppress(OSError, ValueError):      # read while the driver replaces it
                seen.update(c["status"] for c in _manifest(out)["cells"])
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        report = run_sweep(spec, out, workers=2, threads=1, plot=False, log=lambda line: None)
    finally:
        done.set()
        watcher.join()
    m = _manifest(out)
    status = {c["config"]["task_params"]["dim"]: c["status"] for c in m["cells"]}
    assert status == {2: "complete", 3: "failed", 4: "complete", 5: "complete"}, status
    failed = next(c for c in m["cells"] if c["status"] == "failed")
    assert "worker process died" in failed["error"] and (out / failed["dir"] / "failed.json").is_file()
    assert report.failed == [failed["name"]] and "running" in seen
    (plug / "killer_est.py").write_text(KILLER.replace("seed == 1 and", "seed == -1 and"))
    report = run_sweep(spec, out, workers=2, threads=1, plot=False, resume=True, log=lambda line: None)
    assert report.ok and {c["status"] for c in _manifest(out)["cells"]} == {"complete"}


def test_a_broken_pool_fails_only_the_cells_a_worker_had_taken(tmp_path):
    """What the driver makes of a broken pool's cells, from their directories: the one left running by a
    dead writer is failed; one stopped by the pool's end is continued; one never taken goes back to the
    queue however many pools break (it was failed with the pool before); one taken that died before its
    config.json is run again once, then failed (a worker that always dies there cannot loop the driver)."""
    import socket
    from types import SimpleNamespace

    from fake_runs import write_fake_run

    from mibench.records import SweepManifest
    from mibench.sweep.progress import SweepProgress

    rows = [{"estimator": "nwj", "true_mi": 2.0, "bias": -0.5, "variance": 0.01, "mse": 0.26}]
    cells = [SimpleNamespace(name=n, config={"seed": i}) for i, n in enumerate(["dead", "stopped", "queued", "early"])]
    dead = write_fake_run(tmp_path / "dead", rows, status="running")
    cfg = read_config(dead)
    cfg["writer"] = {"host": socket.gethostname(), "pid": 2**22 + 7}
    (dead / "config.json").write_text(json.dumps(cfg))
    write_fake_run(tmp_path / "stopped", rows, status="interrupted")
    manifest = SweepManifest(tmp_path, "t", {}, {c.name: c.config for c in cells}, {})
    progress = SweepProgress(tmp_path, manifest, {}, len(cells), lambda line: None)
    resuming, losses = set(), {}
    again = progress.lost(cells, {"dead", "stopped", "early"}, resuming, losses)
    assert [c.name for c in again] == ["stopped", "queued", "early"] and resuming == {"stopped"}
    assert manifest.by_name["dead"]["status"] == "failed" and read_config(dead)["status"] == "interrupted"
    assert "worker process died" in json.loads((dead / "failed.json").read_text())["error"]
    again = progress.lost(again, {"early"}, resuming, losses)
    assert [c.name for c in again] == ["stopped", "queued"]
    assert manifest.by_name["early"]["status"] == "failed" and (tmp_path / "early" / "failed.json").is_file()
