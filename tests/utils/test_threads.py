"""The thread rule of mibench/utils/threads.py, on fake affinity, quota and load (no timings)."""
import json
from types import SimpleNamespace

import pytest
import torch

from mibench.errors import MibenchError
from mibench.utils import threads as T


def _cgroup(tmp_path, proc_line, files):
    root = tmp_path / "cg"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    proc = tmp_path / "proc_cgroup"
    proc.write_text(proc_line)
    return T.cgroup_cpu_limit(root, proc)


def test_cgroup_v2_quota_is_the_smallest_along_the_path(tmp_path):
    files = {"cpu.max": "max 100000\n", "a/cpu.max": "300000 100000\n", "a/b/cpu.max": "150000 100000\n"}
    assert _cgroup(tmp_path, "0::/a/b\n", files) == 1.5
    assert _cgroup(tmp_path, "0::/a/b\n", {**files, "a/cpu.max": "100000 100000\n"}) == 1.0
    assert _cgroup(tmp_path, "0::/a\n", {"cpu.max": "max 100000\n", "a/cpu.max": "max 100000\n"}) is None
    assert _cgroup(tmp_path, "0::/\n", {}) is None                            # no cpu.max anywhere


def test_cgroup_v1_quota(tmp_path):
    files = {"cpu,cpuacct/docker/x/cpu.cfs_quota_us": "50000\n", "cpu,cpuacct/docker/x/cpu.cfs_period_us": "100000\n"}
    assert _cgroup(tmp_path, "5:cpu,cpuacct:/docker/x\n1:name=systemd:/\n", files) == 0.5
    unlimited = {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}
    assert _cgroup(tmp_path, "1:cpu:/\n2:cpuacct:/\n0::/\n", unlimited) is None


def test_usable_cores_are_the_affinity_capped_by_the_quota_rounded_up():
    assert T.usable_cores(affinity=4, limit=None) == 4
    assert T.usable_cores(affinity=4, limit=2.5) == 3
    assert T.usable_cores(affinity=4, limit=2.0) == 2
    assert T.usable_cores(affinity=2, limit=8.0) == 2
    assert T.usable_cores(affinity=8, limit=0.5) == 1


@pytest.mark.parametrize("busy, taken", [(0.0, 0), (0.2, 0), (0.25, 0), (0.3, 1), (0.97, 1), (1.2, 1), (1.3, 2)])
def test_a_core_is_taken_when_others_use_more_than_a_quarter_of_it(busy, taken):
    assert T.taken_cores(busy) == taken


def test_free_cores_are_at_least_one():
    assert T.free_cores(2, 0.05) == 2 and T.free_cores(2, 1.0) == 1 and T.free_cores(2, 3.0) == 1


def _no_probe(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("the load must not be measured here")
    monkeypatch.setattr(T, "LoadProbe", fail)


@pytest.mark.parametrize("usable, busy, workers, threads", [
    (2, 0.05, 1, 2),     # idle 2-core machine: both cores
    (2, 1.0, 1, 1),      # beside one busy process: the free core
    (2, 0.0, 2, 1),      # two workers share two cores
    (8, 1.0, 3, 2),      # 7 free cores / 3 workers
    (4, 0.0, 8, 1),      # more workers than cores: at least one thread each
])
def test_threads_share_the_free_cores(monkeypatch, usable, busy, workers, threads):
    _no_probe(monkeypatch)
    choice = T.choose_threads(None, workers, usable=usable, busy=busy, env={})
    assert choice.threads == threads and choice.source == "free cores"
    assert "usable cores free" in choice.describe()


def test_an_explicit_request_wins_and_measures_nothing(monkeypatch):
    _no_probe(monkeypatch)
    assert T.choose_threads(3, usable=2, env={}).threads == 3                 # --threads, even above the cores
    c = T.choose_threads(None, usable=2, env={"OMP_NUM_THREADS": "1"})
    assert (c.threads, c.source) == (1, "OMP_NUM_THREADS")
    assert T.choose_threads(4, usable=2, env={"OMP_NUM_THREADS": "1"}).threads == 4   # the flag before the env
    for bad in (0, -2, "two", 1.5):
        with pytest.raises(MibenchError, match="--threads must be a positive integer"):
            T.choose_threads(bad, usable=2, env={})


def test_an_unreadable_omp_num_threads_is_ignored_as_torch_ignores_it(monkeypatch):
    c = T.choose_threads(None, usable=2, busy=0.0, env={"OMP_NUM_THREADS": "lots"})
    assert (c.threads, c.source) == (2, "free cores")


def test_the_load_is_measured_when_nothing_is_requested(monkeypatch):
    monkeypatch.setattr(T.LoadProbe, "busy_cores", lambda self, *a: 1.0)
    assert T.choose_threads(None, usable=2, env={}).threads == 1


@pytest.mark.parametrize("requested, free, threads, workers", [(4, 2, 1, 2), (4, 2, 2, 1), (1, 8, 1, 1), (3, 1, 4, 1),
                                                               (6, 8, 2, 4)])
def test_workers_fit_the_free_cores(requested, free, threads, workers):
    assert T.max_workers(requested, free, threads) == workers


class _Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _stat(tmp_path, rows):
    """A /proc/stat with per-CPU rows (user, nice, system, idle, iowait, irq, softirq, steal)."""
    path = tmp_path / "stat"
    total = [sum(col) for col in zip(*rows)]
    path.write_text("\n".join([f"cpu  {' '.join(map(str, total))}"]
                              + [f"cpu{i} {' '.join(map(str, r))}" for i, r in enumerate(rows)]) + "\nintr 1 2\n")
    return path


def test_probe_counts_other_processes_on_the_usable_cpus_without_its_own_time(tmp_path, monkeypatch):
    clock, own = _Clock(), SimpleNamespace(user=10.0, system=1.0)
    path = _stat(tmp_path, [[0] * 8, [0] * 8, [0] * 8])
    probe = T.LoadProbe(path, clock=clock, own_times=lambda: own, cpus={0, 1}, niced=False)
    # one second later: cpu0 busy all the time (a busy loop), cpu1 half (this process: 0.4 s user + 0.1 s
    # system), cpu2 (outside the affinity) busy too; 30 ticks of nice-19 work on cpu1
    _stat(tmp_path, [[100, 0, 0, 0, 0, 0, 0, 0], [40, 30, 10, 20, 0, 0, 0, 0], [100, 0, 0, 0, 0, 0, 0, 0]])
    clock.t += 1.0
    own.user, own.system = 10.4, 1.1
    monkeypatch.setattr(T, "ticks_per_second", lambda: 100)
    assert probe.busy_cores() == pytest.approx(1.0)
    niced = T.LoadProbe(path, clock=clock, own_times=lambda: own, cpus={0, 1}, niced=True)
    _stat(tmp_path, [[100, 0, 0, 0, 0, 0, 0, 0], [40, 60, 10, 20, 0, 0, 0, 0], [100, 0, 0, 0, 0, 0, 0, 0]])
    clock.t += 1.0
    assert niced.busy_cores() == pytest.approx(0.3)        # a niced run counts the other niced work


def test_probe_waits_for_its_shortest_window_and_reads_nothing_without_proc_stat(tmp_path, monkeypatch):
    slept = []
    monkeypatch.setattr(T.time, "sleep", slept.append)
    clock = _Clock()
    probe = T.LoadProbe(_stat(tmp_path, [[0] * 8]), clock=clock, cpus={0}, niced=False)
    clock.t += 0.05
    probe.busy_cores(min_window=0.25)
    assert slept == [pytest.approx(0.2)]
    assert T.LoadProbe(tmp_path / "missing", cpus={0}).busy_cores() == 0.0


def test_using_threads_restores_the_count_and_records_the_rule():
    before = torch.get_num_threads()
    with T.using_threads(1, "1 (a rule)"):
        assert torch.get_num_threads() == 1 and T.thread_setting() == "1 (a rule)"
    assert torch.get_num_threads() == before and T.thread_setting() is None


def test_sweep_workers_never_oversubscribe_the_free_cores(monkeypatch):
    from mibench.sweep import Execution

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    _no_probe(monkeypatch)
    ex = Execution(workers=4).resolve({}).sized(8, "cpu", usable=2, busy=0.0)
    assert (ex.workers, ex.threads) == (2, 1) and "--workers 4 would oversubscribe" in ex.threads_rule
    ex = Execution().resolve({}).sized(8, "cpu", usable=2, busy=1.0)            # beside one busy process
    assert (ex.workers, ex.threads) == (1, 1)
    ex = Execution().resolve({}).sized(1, "cpu", usable=4, busy=0.0)            # one cell: all free cores
    assert (ex.workers, ex.threads) == (1, 4)
    ex = Execution(workers=2, threads=2).resolve({}).sized(8, "cpu", usable=2, busy=0.0)
    assert (ex.workers, ex.threads) == (1, 2)
    ex = Execution(workers=3).resolve({}).sized(8, "cuda", usable=2, busy=0.0)  # GPU cells: as asked
    assert (ex.workers, ex.threads) == (3, None)


def _run(tmp_path, *flags):
    from mibench.cli import main

    out = tmp_path / "run"
    assert main(["run", "--task", "gaussian", "--dim", "2", "--estimator", "smile", "--steps", "20", "--hidden", "8",
                 "--layers", "0", "--batch-size", "8", "--mi", "1", "--device", "cpu", "--quiet", "--no-plot",
                 "--out", str(out), *flags]) == 0
    return json.loads((out / "config.json").read_text())["environment"]


def test_a_run_takes_the_free_cores_and_records_why(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(T, "usable_cores", lambda *a, **k: 2)
    monkeypatch.setattr(T.LoadProbe, "busy_cores", lambda self, *a: 1.0)
    before = torch.get_num_threads()
    env = _run(tmp_path)
    assert env["torch_threads"] == 1 and env["threads_rule"].startswith("1 (1 of 2 usable cores free")
    assert torch.get_num_threads() == before                   # main() in-process leaves the caller's setting


def test_a_run_honours_threads(tmp_path, monkeypatch):
    monkeypatch.setattr(T.LoadProbe, "busy_cores", lambda self, *a: pytest.fail("measured the load"))
    env = _run(tmp_path, "--threads", "1")
    assert env["torch_threads"] == 1 and env["threads_rule"].startswith("1 (--threads")


def test_a_bad_threads_flag_is_one_line(tmp_path, capsys):
    from mibench.cli import main

    assert main(["run", "--task", "gaussian", "--steps", "5", "--threads", "0", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--threads must be a positive integer" in err[0]
    assert not (tmp_path / "r").exists()
