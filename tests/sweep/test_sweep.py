"""Sweeps: grid expansion, config files, presets, resume after a kill, failures, local pool."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mibench.protocols.stream.run as stream_run
import mibench.protocols.stream.training as stream_training
from mibench.cli import main
from mibench.errors import MibenchError
from mibench.estimators import resolve_estimators
from mibench.records import is_complete, read_config
from mibench.sweep import SweepSpec, load_spec, plan, run_sweep
from mibench.sweep.lock import driver_alive, lock_path
from mibench.sweep.lock import sweep_lock as sweep_lock_ctx
from mibench.sweep.plan import sweep_status
from mibench.sweep.presets import PRESETS, load_preset

TINY = {"tasks": [{"task": "gaussian", "params": {"dim": 2}}], "estimators": ["smile-5", "infonce"],
        "seeds": [0, 1], "steps": 30, "hidden": 8, "layers": 0, "batch_size": 16, "mi": "1,2", "device": "cpu"}


def tiny(**over):
    return SweepSpec.from_dict({**TINY, **over})


@pytest.fixture
def count_runs(monkeypatch):
    """Count streaming runs made in this process (workers=1 runs cells in-process)."""
    calls = []
    real = stream_run.run

    def counting(prepared, *a, **k):
        cfg = prepared.config
        calls.append((cfg.task_params, cfg.seed, k.get("resume")))
        return real(prepared, *a, **k)

    monkeypatch.setattr(stream_run, "run", counting)
    return calls


def test_grid_expansion_and_names():
    spec = SweepSpec.from_dict({"tasks": ["gaussian"], "params": {"dim": [2, 4]}, "estimators": "smile,nwj",
                                "critics": ["joint", "separable"], "seeds": "0-1", "layers": [1, 2], "steps": 50})
    cells = spec.cells()
    assert len(cells) == 2 * 2 * 2 * 2
    assert all(c.config["estimators"] == ["smile-5", "nwj"] for c in cells)   # estimators share a cell
    names = [c.name for c in cells]
    assert len(set(names)) == len(names)
    assert names[0] == "gaussian_dim2_joint-d1w256_b64_mistepwise_s0"
    assert "gaussian_dim4_separable-d2w256e32_b64_mistepwise_s1" in names
    split = SweepSpec.from_dict({"tasks": ["gaussian"], "estimators": ["smile", "nwj"], "split_estimators": True,
                                 "steps": [20, 40], "mi": [2, "stepwise"]}).cells()
    assert len(split) == 2 * 2 * 2 and {tuple(c.config["estimators"]) for c in split} == {("smile-5",), ("nwj",)}
    assert any(n.name.endswith("_n40_s0") and "mi2" in n.name for n in split)
    # N cells of whole critics: the 8 paper estimators train 5 critics (JS and SMILE-tau share one),
    # split 2 + 2 + 1, and the shared critic is never split across cells
    groups = SweepSpec.from_dict({"tasks": ["gaussian"], "estimators": "all", "split_estimators": 3}).cells()
    assert [c.config["estimators"] for c in groups] == [["nwj", "js", "smile-1", "smile-5", "smile-inf"],
                                                        ["infonce", "dv"], ["mine"]]
    assert sorted(sum((c.config["estimators"] for c in groups), [])) == sorted(resolve_estimators("all"))
    assert len({c.name for c in groups}) == 3
    per_critic = SweepSpec.from_dict({"tasks": ["gaussian"], "estimators": "all", "split_estimators": True}).cells()
    assert [len(c.config["estimators"]) for c in per_critic] == [1, 4, 1, 1, 1]
    with pytest.raises(MibenchError, match="split_estimators"):
        SweepSpec.from_dict({"tasks": ["gaussian"], "split_estimators": 0})
    # per-task overrides
    spec = SweepSpec.from_dict({"tasks": [{"task": "gaussian", "params": {"dim": [1, 2]}, "mi": 1},
                                          {"task": "vision", "params": {"side": 10}, "layers": [1, 3]}],
                                "steps": 20})
    cells = spec.cells()
    assert [c.config["layers"] for c in cells if c.config["task"] == "vision"] == [1, 3]
    assert {c.config["mi"] for c in cells if c.config["task"] == "gaussian"} == {1}


@pytest.mark.parametrize("data,match", [
    ({"tasks": ["gausian"]}, "did you mean 'gaussian'"),
    ({"tasks": ["gaussian"], "critcs": ["joint"]}, "did you mean 'critics'"),
    ({"tasks": ["gaussian"], "params": {"nuisance": 0.3}}, "does not take 'nuisance'"),
    ({"tasks": ["gaussian"], "estimators": ["smiel"]}, "smile"),
    ({"tasks": ["gaussian"], "critics": ["mlp"]}, "unknown critic"),
    ({"tasks": ["gaussian"], "seeds": "x"}, "seeds"),
    ({"tasks": ["gaussian"], "mi": "banana"}, "--mi must be"),
    ({"tasks": ["gaussian"], "layers": "deep"}, "layers must be an integer"),
    ({"tasks": ["gaussian"], "seeds": []}, "empty list"),
    ({"tasks": ["gaussian"], "layers": []}, "empty list"),
    ({"estimators": ["smile"]}, "needs 'tasks'"),
])
def test_spec_mistakes_are_one_line_errors(data, match):
    with pytest.raises(MibenchError, match=match):
        SweepSpec.from_dict(data)


def test_toml_and_yaml_configs_agree(tmp_path):
    toml = tmp_path / "grid.toml"
    toml.write_text('name = "mygrid"\nestimators = ["smile-5", "nwj"]\nseeds = [0, 1]\nsteps = 30\n'
                    'mi = [2, "stepwise"]\n\n[[tasks]]\ntask = "gaussian"\nparams = { dim = [2, 4] }\n')
    yaml = tmp_path / "grid.yaml"
    yaml.write_text("name: mygrid\nestimators: [smile-5, nwj]\nseeds: [0, 1]\nsteps: 30\nmi: [2, stepwise]\n"
                    "tasks:\n  - task: gaussian\n    params: {dim: [2, 4]}\n")
    a, b = load_spec(toml), load_spec(yaml)
    assert a.name == "mygrid" and [c.name for c in a.cells()] == [c.name for c in b.cells()]
    assert len(a.cells()) == 8
    bad = tmp_path / "bad.toml"
    bad.write_text("tasks = [\n")
    with pytest.raises(MibenchError, match="not valid TOML"):
        load_spec(bad)
    # a key given twice: TOML refuses it, and so does the YAML reader (PyYAML kept the last one)
    twice = tmp_path / "twice.yaml"
    twice.write_text("tasks: [gaussian]\nsteps: 30\nestimators: [nwj]\nsteps: 300\n")
    with pytest.raises(MibenchError, match="key 'steps' is given twice.*line 4"):
        load_spec(twice)
    nested = tmp_path / "nested.yaml"
    nested.write_text("tasks:\n  - task: gaussian\n    params: {dim: 2, dim: 4}\n")
    with pytest.raises(MibenchError, match="key 'dim' is given twice"):
        load_spec(nested)


def test_presets_expand_in_both_forms():
    for name in PRESETS:
        quick, full = load_preset(name, "quick").cells(), load_preset(name, "full").cells()
        assert 0 < len(quick) <= len(full), name
        if "steps" in quick[0].config:
            assert quick[0].config["steps"] < full[0].config["steps"]
        else:   # the catalogue presets run the sample protocol (tests/tasks/test_catalogue_presets.py)
            assert len(quick[0].config["seeds"]) <= len(full[0].config["seeds"]), name
    full = load_preset("estimators", "full").cells()
    assert {c.config["task"] for c in full} == {"gaussian", "vision", "text"}
    assert full[0].config["estimators"] == ["nwj", "js", "infonce", "dv", "mine", "smile-1", "smile-5", "smile-inf"]
    assert full[0].config["steps"] == 20000 and full[0].config["hidden"] == 256
    assert {c.config["task_params"].get("side") for c in load_preset("dr", "full").cells()} == {10, 20, 28, 40, 64, 100}
    assert {c.config["task_params"].get("nuisance") for c in load_preset("nuisance", "full").cells()} == \
        {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}
    assert {c.config["layers"] for c in load_preset("depth", "full").cells()} == {1, 2, 3, 4, 5}
    assert {c.config["critic"] for c in load_preset("critics", "full").cells()} == {"joint", "separable", "bilinear"}


def test_a_sample_sweep_without_seeds_takes_the_three_default_seeds(tmp_path, capsys):
    """mibench run --help says a sweep's sample cells default to seeds 0,1,2 (a variance over seeds); they ran
    seed 0 alone."""
    assert main(["sweep", "--task", "gaussian", "--estimator", "ksg", "--n", "300", "--out", str(tmp_path / "s"),
                 "--dry-run"]) == 0
    assert "gaussian_sample-n300_mi4_seeds0-1-2" in capsys.readouterr().out


@pytest.mark.parametrize("args,message", [
    (["--task", "gaussian", "--set", "dim=1", "--mi", "30"], "holds at most 16 bits"),
    (["--task", "vision", "--set", "ds=4", "--mi", "5"], "holds at most 4 bits (ds = 4 binary sources)"),
    (["--task", "text", "--set", "ds=2", "--mi", "3"], "holds at most 2 bits"),
    (["--task", "gaussian", "--burn-in", "200"], "--burn-in 200 is as long as an MI level"),
])
def test_a_cell_that_cannot_run_is_refused_when_the_sweep_is_planned(tmp_path, capsys, args, message):
    """A level above the task's maximum, or a burn-in as long as a level, failed each cell at its turn (exit 3,
    'some estimates failed') while --dry-run listed it as todo: refused before anything runs, exit 2."""
    cmd = ["sweep", *args, "--estimator", "smile-5", "--steps", "100", "--out", str(tmp_path / "s")]
    assert main([*cmd, "--dry-run"]) == 2
    assert message in capsys.readouterr().err
    assert main(cmd) == 2 and not (tmp_path / "s").exists()


def test_more_seeds_of_a_sample_sweep_say_where_they_go(tmp_path, capsys):
    """A streaming sweep extended by a seed resumes; a sample sweep's cell holds all its seeds, so --seeds 0-2
    over --seeds 0-1 is another sweep: the refusal says so and where the seeds go."""
    base = ["sweep", "--task", "gaussian", "--set", "dim=2", "--estimator", "ksg", "--n", "300", "--mi", "1",
            "--timeout", "0", "--no-plot", "--no-leaderboard", "--out", str(tmp_path / "s")]
    assert main([*base, "--seeds", "0-1"]) == 0
    capsys.readouterr()
    assert main([*base, "--seeds", "0-2", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "(seeds differ)" in err and "another --out" in err and "pools the seeds" in err


def test_cli_shorthand_dry_run_and_dump(tmp_path, capsys):
    args = ["sweep", "--task", "gaussian", "--estimator", "smile,nwj", "--seeds", "0,1", "--steps", "200",
            "--set", "dim=2,4", "--out", str(tmp_path / "s"), "--dry-run"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "4 cells (0 complete, 0 to resume, 4 to run)" in out
    assert "gaussian_dim4_joint-d2w256_b64_mistepwise_s1" in out
    assert main(["sweep", "--preset", "depth", "--quick", "--dump-config"]) == 0
    dumped = tmp_path / "depth.yaml"
    dumped.write_text(capsys.readouterr().out)
    assert [c.name for c in load_spec(dumped).cells()] == [c.name for c in load_preset("depth").cells()]
    assert main(["sweep", "--preset", "estimators", "--steps", "50", "--dry-run", "--out", str(tmp_path / "p")]) == 0
    assert "; 50 steps]" in capsys.readouterr().out
    assert main(["sweep", "--preset", "nope"]) == 2
    assert main(["sweep"]) == 2
    assert main(["sweep", "--task", "gaussian", "--set", "dim"]) == 2
    assert "--set expects" in capsys.readouterr().err
    assert main(["sweep", "--task", "gaussian", "--set", "dim=2", "--set", "dim=4", "--dry-run"]) == 2
    assert "--set dim is given twice" in capsys.readouterr().err          # the last one silently won


@pytest.mark.parametrize("flag", [["--workers", "0"], ["--workers", "-1"], ["--threads", "0"]])
def test_a_dry_run_checks_the_execution_flags(tmp_path, capsys, flag):
    """A dry run is where a user checks a command: it refused nothing (exit 0 with --workers 0)."""
    assert main(["sweep", "--task", "gaussian", "--out", str(tmp_path / "s"), "--dry-run", *flag]) == 2
    assert f"{flag[0]} must be an integer >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("task,setting,msg", [
    ("gaussian", "dim=2,0", "task 'gaussian': dim must be an integer >= 1, got 0"),
    ("vision", "side=3", "task 'vision': side must be an integer in [8, 1024]"),
    ("vision", "ds=0", "task 'vision': ds must be an integer in [1, 4096]"),
    ("text", "n_per_class=1", "task 'text': n_per_class must be an integer >= 2"),
    ("vision", "n_per_class=abc", "task 'vision': n_per_class must be an integer"),
    ("mixed", "nuisance=2", "task 'mixed': nuisance (eta) must be in [0, 1]"),
])
def test_a_dry_run_checks_the_task_parameters_values(tmp_path, capsys, task, setting, msg):
    """A value the task would refuse when its cell runs is refused by the dry run (no data loaded)."""
    out = tmp_path / "s"
    assert main(["sweep", "--task", task, "--set", setting, "--out", str(out), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0] and not out.exists()


def test_a_complete_cell_whose_file_changed_since_is_redone(tmp_path, count_runs):
    """--resume (and --dry-run) counted a cell whose estimates.csv was cut short as done: the sweep could
    never be repaired, and plot refused it (exit 4)."""
    out = tmp_path / "sw"
    spec = tiny()
    run_sweep(spec, out, workers=1, plot=False, log=lambda s: None)
    cell = out / spec.cells()[0].name
    est = cell / "estimates.csv"
    est.write_bytes(est.read_bytes()[:200])
    p = plan(spec, out)
    assert [c.name for c in p.todo] == [cell.name] and "does not match the checksum" in p.damaged[cell.name]
    lines = []
    run_sweep(spec, out, resume=True, workers=1, plot=False, log=lines.append)
    assert len(count_runs) == 3 and any(f"cell {cell.name} is redone" in line for line in lines)
    assert not plan(spec, out).damaged and is_complete(cell)


def test_a_dry_run_says_what_the_run_would_of_out(tmp_path, capsys):
    """--dry-run printed 'N to run' for an --out the command then refused: a run directory, a folder of
    other files, a sweep that needs --resume."""
    run = tmp_path / "run"
    assert main(["run", "--task", "gaussian", "--dim", "2", "--estimator", "gaussian", "--n", "200", "--mi", "2",
                 "--timeout", "0", "--quiet", "--no-plot", "--out", str(run)]) == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    capsys.readouterr()
    for out, msg in ((run, "is a run directory"), (other, "is not a mibench sweep directory")):
        assert main(["sweep", "--task", "gaussian", "--out", str(out), "--dry-run"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0]


def test_resume_skips_complete_continues_interrupted_redoes_failed(tmp_path, count_runs):
    out = tmp_path / "sw"
    spec = tiny()
    r1 = run_sweep(spec, out, workers=1, plot=False, log=lambda s: None)
    assert r1.ran == 2 and r1.ok and len(count_runs) == 2
    cells = [out / c.name for c in spec.cells()]
    assert all(is_complete(c) for c in cells)
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["status"] == "complete" and manifest["counts"]["complete"] == 2
    mtimes = {c: (c / "summary.csv").stat().st_mtime_ns for c in cells}
    # the same sweep into its directory needs --resume (or --overwrite)
    with pytest.raises(MibenchError, match="already holds this sweep .*--resume"):
        run_sweep(spec, out, workers=1, plot=False, log=lambda s: None)
    # a cell whose writer died mid-way (status "running", writer gone): continued, not redone
    cfg = read_config(cells[1])
    cfg["status"] = "running"
    cfg["writer"] = {"host": cfg.get("writer", {}).get("host") or __import__("socket").gethostname(), "pid": 2**22 + 7}
    (cells[1] / "config.json").write_text(json.dumps(cfg))
    (cells[1] / "summary.csv").unlink()
    r2 = run_sweep(spec, out, resume=True, workers=1, plot=False, log=lambda s: None)
    assert (r2.ran, r2.skipped) == (1, 1) and len(count_runs) == 3 and count_runs[-1][1:] == (1, True)
    assert (cells[0] / "summary.csv").stat().st_mtime_ns == mtimes[cells[0]]   # not recomputed
    assert is_complete(cells[1])
    # a failed cell is redone from the start (its directory cleared)
    cfg = read_config(cells[1])
    cfg["status"] = "failed"
    (cells[1] / "config.json").write_text(json.dumps(cfg))
    (cells[1] / "left-over.tmp").write_text("x")
    r3 = run_sweep(spec, out, resume=True, workers=1, plot=False, log=lambda s: None)
    assert r3.ran == 1 and count_runs[-1][2] is False and not (cells[1] / "left-over.tmp").exists()
    # nothing left: nothing runs; an edited spec is refused rather than mixed in
    r4 = run_sweep(spec, out, resume=True, workers=1, plot=False, log=lambda s: None)
    assert r4.ran == 0 and len(count_runs) == 4
    with pytest.raises(MibenchError, match="holds a different sweep.*--overwrite"):
        run_sweep(tiny(lr=1e-3), out, resume=True, workers=1, plot=False, log=lambda s: None)
    assert len(json.loads((out / "sweep.json").read_text())["invocations"]) == 4
    # a sweep that extends it (one more seed) continues it with --resume; one with fewer cells is another sweep
    r5 = run_sweep(tiny(seeds=[0, 1, 2]), out, resume=True, workers=1, plot=False, log=lambda s: None)
    assert (r5.ran, r5.skipped) == (1, 2) and len(json.loads((out / "sweep.json").read_text())["cells"]) == 3
    with pytest.raises(MibenchError, match="holds a different sweep"):
        run_sweep(tiny(seeds=[0]), out, resume=True, workers=1, plot=False, log=lambda s: None)
    # --overwrite replaces it
    r6 = run_sweep(tiny(lr=1e-3), out, overwrite=True, workers=1, plot=False, log=lambda s: None)
    assert r6.ran == 2 and len(json.loads((out / "sweep.json").read_text())["invocations"]) == 1


def test_failed_cell_is_recorded_not_fatal(tmp_path, monkeypatch, capsys):
    real = stream_run.run

    def flaky(prepared, *a, **k):
        if prepared.config.seed == 1:
            raise RuntimeError("CUDA out of memory (simulated)")
        return real(prepared, *a, **k)

    monkeypatch.setattr(stream_run, "run", flaky)
    out = tmp_path / "sw"
    code = main(["sweep", "--task", "gaussian", "--set", "dim=2", "--estimator", "smile", "--seeds", "0,1",
                 "--steps", "20", "--hidden", "8", "--layers", "0", "--batch-size", "16", "--mi", "2",
                 "--device", "cpu", "--workers", "1", "--no-plot", "--out", str(out)])
    assert code == 3
    text = capsys.readouterr()
    assert "1 failed" in text.out and "CUDA out of memory" in text.out
    manifest = json.loads((out / "sweep.json").read_text())
    by = {c["name"]: c for c in manifest["cells"]}
    bad = next(c for n, c in by.items() if n.endswith("_s1"))
    good = next(c for n, c in by.items() if n.endswith("_s0"))
    assert bad["status"] == "failed" and "RuntimeError: CUDA out of memory" in bad["error"]
    assert good["status"] == "complete" and manifest["status"] == "incomplete"
    failed = json.loads((out / bad["dir"] / "failed.json").read_text())
    assert "Traceback" in failed["traceback"]
    assert (out / "leaderboard.csv").is_file()     # built from the cells that finished
    # re-running retries only the failed cell (and succeeds now)
    monkeypatch.setattr(stream_run, "run", real)
    r = run_sweep(load_spec_from_manifest(out), out, resume=True, workers=1, plot=False, log=lambda s: None)
    assert (r.ran, r.skipped, r.ok) == (1, 1, True)
    assert not (out / bad["dir"] / "failed.json").exists()


def test_training_error_is_reported_with_its_real_cause(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("NaN in the optimizer (simulated)")

    monkeypatch.setattr(stream_training, "train", boom)
    out = tmp_path / "sw"
    report = run_sweep(tiny(seeds=[0]), out, workers=1, plot=False, log=lambda s: None)
    assert report.failed and "RuntimeError: NaN in the optimizer" in report.results[report.failed[0]].error
    assert read_config(out / report.failed[0])["status"] == "failed"


def load_spec_from_manifest(out: Path) -> SweepSpec:
    return SweepSpec.from_dict(json.loads((out / "sweep.json").read_text())["spec"])


def test_kill_mid_sweep_then_resume(tmp_path, count_runs):
    """A real process killed (SIGKILL) after its first cell finished: nothing finished is lost or
    recomputed, the partial cell is redone, the stale lock is taken over."""
    out = tmp_path / "sw"
    cmd = [sys.executable, "-m", "mibench.cli", "sweep", "--task", "gaussian", "--set", "dim=2", "--estimator",
           "smile", "--seeds", "0-2", "--steps", "200", "--hidden", "8", "--layers", "0", "--batch-size", "16",
           "--mi", "2", "--device", "cpu", "--workers", "1", "--no-plot", "--no-leaderboard", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.time() + 90
        done = []
        while time.time() < deadline and proc.poll() is None:
            done = [d for d in out.glob("gaussian_*") if is_complete(d)]
            if done:
                break
            time.sleep(0.05)
        assert done, "no cell finished in time"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert lock_path(out).exists()          # the dead driver's lock (released by the OS)
    finished = {d.name: (d / "summary.csv").stat().st_mtime_ns for d in out.glob("gaussian_*") if is_complete(d)}
    assert 1 <= len(finished) < 3
    spec = SweepSpec.from_dict({"tasks": [{"task": "gaussian", "params": {"dim": 2}}], "estimators": "smile",
                                "seeds": "0-2", "steps": 200, "hidden": 8, "layers": 0, "batch_size": 16, "mi": 2,
                                "device": "cpu"})
    spec.name = json.loads((out / "sweep.json").read_text())["name"]
    report = run_sweep(spec, out, resume=True, workers=1, plot=False, log=lambda s: None)
    assert report.ok and report.skipped == len(finished) and report.ran == 3 - len(finished)
    assert len(count_runs) == 3 - len(finished)
    for name, mtime in finished.items():
        assert (out / name / "summary.csv").stat().st_mtime_ns == mtime
    assert all(is_complete(out / c.name) for c in spec.cells())
    assert not lock_path(out).with_suffix(".holder").exists()


def test_local_process_pool(tmp_path, monkeypatch):
    from mibench.utils import threads

    monkeypatch.setattr(threads, "usable_cores", lambda *a, **k: 2)      # two workers fit, whatever the load
    monkeypatch.setattr(threads.LoadProbe, "busy_cores", lambda self, *a: 0.0)
    out = tmp_path / "sw"
    report = run_sweep(tiny(), out, workers=2, threads=1, plot=False, log=lambda s: None)
    assert report.ok and report.ran == 2
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["workers"] == 2 and manifest["threads_per_worker"] == 1
    assert all(c["status"] == "complete" for c in manifest["cells"])
    for c in manifest["cells"]:
        env = read_config(out / c["dir"])["environment"]
        assert env["torch_threads"] == 1
        assert c["pid"] != os.getpid()


def test_execution_options_fill_from_the_spec_and_are_checked(tmp_path, monkeypatch):
    """run_sweep's options are one Execution: unset fields come from the spec's [execution] table,
    a bad value is one line, an unknown keyword a TypeError; keywords override a given Execution."""
    from mibench.sweep import Execution

    spec_table = {"backend": "DASK", "workers": 5, "threads": 2, "address": "tcp://h:1"}
    assert Execution().resolve(spec_table).backend == "local"           # as run_sweep(backend="local")
    ex = Execution(backend=None, workers=3).resolve(spec_table)
    assert (ex.backend, ex.workers, ex.threads, ex.address, ex.shared_fs, ex.plot) == ("dask", 3, 2, "tcp://h:1",
                                                                                     None, True)
    assert ex.sized(4, "cpu") is ex                         # a remote cluster: nothing to size here
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    local = Execution(workers=2).resolve({}).sized(8, "cpu", usable=4, busy=0.0)
    assert local.backend == "local" and local.workers == 2 and local.threads == 2
    for bad, match in (({"backend": "slurm"}, "local or dask"), ({"workers": 0}, "--workers"),
                       ({"threads": 0}, "--threads")):
        with pytest.raises(MibenchError, match=match):
            Execution(**bad).resolve({})
    with pytest.raises(TypeError, match="workerz"):
        run_sweep(tiny(), tmp_path / "sw", workerz=1)
    report = run_sweep(tiny(seeds=[0]), tmp_path / "sw", Execution(workers=4, plot=True), workers=1, plot=False,
                       log=lambda s: None)
    assert report.ok and report.ran == 1
    assert json.loads((tmp_path / "sw" / "sweep.json").read_text())["workers"] == 1
    assert not list((tmp_path / "sw").rglob("*.png"))


@pytest.mark.parametrize("used,pinned,refused", [("all-MiniLM-L6-v2", None, True), ("minilm-imdb", None, False),
                                                 ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2", False)])
def test_a_cell_made_before_the_default_encoder_changed_is_not_skipped_as_complete(tmp_path, used, pinned, refused):
    """Same config, different embeddings: a text cell that left the encoder to the default and ran when
    the default was the off-the-shelf MiniLM is refused in one line, not counted as done."""
    from mibench.records import write_json
    from mibench.sweep.plan import plan

    params = {"ds": 2, **({"encoder": pinned} if pinned else {})}
    spec = SweepSpec.from_dict({"name": "t", "tasks": [{"task": "text", "params": params}], "estimators": ["smile"],
                                "steps": 10, "mi": 1})
    (cell,) = spec.cells()
    d = tmp_path / cell.name
    d.mkdir()
    write_json(d / "config.json", {"status": "complete", "config": cell.config,
                                   "task_info": {"pools": {"imdb": {"encoder": {"encoder": used}}}}})
    (d / "summary.csv").write_text("x\n")
    if refused:
        with pytest.raises(MibenchError, match="made with text encoder 'all-MiniLM-L6-v2'.*pin encoder"):
            plan(spec, tmp_path)
    else:
        assert [c.name for c in plan(spec, tmp_path).done] == [cell.name]


def test_the_lock_finds_a_symlinked_directory_and_a_complete_cell_drops_an_old_failure(tmp_path, monkeypatch):
    """A second driver through a symlink to a swept directory ran beside the first (the lock was named after
    the path as spelled); a cell completed on --resume kept its earlier attempt's failed.json; a sweep with
    --backend dask and no dask installed claimed its directory first and was left 'running'."""
    import sys as _sys

    from mibench.sweep.execute import FAILED, _execute_cell

    out = tmp_path / "sw"
    out.mkdir()
    (tmp_path / "link").symlink_to(out)
    with sweep_lock_ctx(out):
        with pytest.raises(MibenchError, match="is being swept by"):
            with sweep_lock_ctx(tmp_path / "link"):
                pass
        assert driver_alive(out) and sweep_status(out, {"status": "running"}) == "running"
    # a manifest left 'running' by a driver killed outright (SIGKILL: nothing rewrote it) reads as
    # interrupted once nothing holds the lock; the lock is left free by the test
    assert not driver_alive(out) and sweep_status(out, {"status": "running"}) == "interrupted"
    assert sweep_status(tmp_path / "never-swept", {"status": "running"}) == "interrupted"
    assert sweep_status(out, {"status": "complete"}) == "complete"
    holder = lock_path(out).with_suffix(".holder")          # a driver on another host: its lock may not show here
    holder.write_text("another-host:123")
    assert driver_alive(out) and sweep_status(out, {"status": "running"}) == "running"
    holder.unlink()
    with sweep_lock_ctx(out):
        pass
    spec = SweepSpec.from_dict({"name": "t", "tasks": [{"task": "gaussian", "params": {"dim": 2}}],
                                "estimators": ["ksg"], "n": 200, "seeds": [0], "mi": [1.0]})
    cell = spec.cells()[0]
    d = out / cell.name
    assert _execute_cell(cell.config, str(d), False, False, False)["status"] == "complete"
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "status": "interrupted"}))   # an attempt that broke off
    (d / FAILED).write_text("{}")                       # ... and the failure record a broken pool leaves
    assert _execute_cell(cell.config, str(d), False, False, True)["status"] == "complete"
    assert not (d / FAILED).exists()
    monkeypatch.setitem(_sys.modules, "dask.distributed", None)          # as if dask were not installed
    with pytest.raises(MibenchError, match="needs dask"):
        run_sweep(spec, tmp_path / "nodask", backend="dask")
    assert not (tmp_path / "nodask").exists()


@pytest.mark.parametrize("text,suffix,needle", [
    ('tasks = ["gaussian"]\nparams = "dim=4"\n', ".toml", "params must be a table"),
    ('tasks = [{task = "gaussian", params = [1, 2]}]\n', ".toml", "params must be a table"),
    ('tasks = ["gaussian"]\nexecution = [1]\n', ".toml", "[execution] must be a table"),
    ('tasks = ["gaussian"]\n[execution]\nworkers = "two"\n', ".toml", "--workers must be an integer"),
    ("- gaussian\n", ".yaml", "must be a table / mapping at the top level"),
])
def test_config_mistakes_are_one_line(tmp_path, capsys, text, suffix, needle):
    """Each raised a traceback (TypeError, ValueError, AttributeError) with exit 1."""
    cfg = tmp_path / f"c{suffix}"
    cfg.write_text(text)
    assert main(["sweep", str(cfg), "--dry-run", "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err, err


def test_an_invocation_runs_its_cells_in_the_sweeps_order():
    """Resumed (interrupted) cells ran after every new cell: the reference table's slice left its BMI cells
    interrupted, and the next slice ran every image cell before them.  The sweep's order holds now."""
    from types import SimpleNamespace

    from mibench.sweep.plan import Plan

    a, b, c, d = (SimpleNamespace(name=n) for n in "abcd")
    p = Plan(cells=[a, b, c, d], todo=[c, d], resume=[a], done=[b])
    assert [x.name for x in p.to_run] == ["a", "c", "d"]
