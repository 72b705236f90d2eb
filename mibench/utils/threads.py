"""How many torch threads a CPU run uses: the cores actually free to it (no torch import here).

A run given more threads than there are free cores loses far more than the missing cores: torch's
intra-op threads meet at a barrier after every operation, and one thread waiting for a core that
another process holds stalls them all (``benchmarks/bench_contention.py`` measures it).  So a
mibench process counts the cores free to it once, when it starts, and takes at most its share:

1. the cores usable at all: the CPU affinity mask (``os.sched_getaffinity``) and the cgroup CPU
   quota (``cpu.max`` of cgroup v2 along this process's cgroup path, ``cpu.cfs_quota_us`` /
   ``cpu.cfs_period_us`` of v1), a fractional quota rounded up;
2. minus the cores other processes keep busy: the busy time of the usable CPUs in ``/proc/stat``
   over a short window, this process's own CPU time taken out.  A core counts as taken when other
   processes use more than :data:`TAKEN_SHARE` of it.  Processes of lower priority (nice > 0) are
   not counted, since the scheduler gives them way, unless this process is niced as well;
3. shared among the processes of one job that run at once (a sweep's workers), at least 1 each;
4. an explicit request wins: ``--threads``, else ``OMP_NUM_THREADS`` when set.

:func:`choose_threads` is the rule, a pure function of those inputs; :class:`LoadProbe` measures
the busy cores; :func:`using_threads` sets torch's thread count for a run and remembers the choice
for ``config.json``.
"""
from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

from mibench.errors import MibenchError

#: other processes' use of a core above which the core counts as taken (round busy cores up from .25)
TAKEN_SHARE = 0.25
#: shortest window over which :class:`LoadProbe` measures the other processes' load (seconds)
MIN_WINDOW = 0.25

_RULE: str | None = None


def affinity_cores() -> int:
    """CPUs this process may run on (its affinity mask; all CPUs where the OS has no masks)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (macOS / Windows)
        return os.cpu_count() or 1


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cgroup_cpu_limit(root: str | Path = "/sys/fs/cgroup",
                     proc_cgroup: str | Path = "/proc/self/cgroup") -> float | None:
    """The CPU quota of this process's cgroup in cores (``None``: no quota): the smallest ``cpu.max``
    along its cgroup v2 path, else cgroup v1's ``cfs_quota_us / cfs_period_us``."""
    root = Path(root)
    limits = []
    text = _read(Path(proc_cgroup)) or ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, rel = parts
        rel = rel.lstrip("/")
        if hierarchy == "0" and controllers == "":          # cgroup v2: cpu.max at every level up to the root
            here = root / rel if rel else root
            while True:
                limits.append(_v2_limit(_read(here / "cpu.max")))
                if here == root or root not in here.parents:
                    break
                here = here.parent
        elif "cpu" in controllers.split(","):               # cgroup v1: the cpu controller's quota
            for base in (root / "cpu", root / "cpu,cpuacct", root / controllers):
                for where in ([base / rel, base] if rel else [base]):
                    quota, period = _read(where / "cpu.cfs_quota_us"), _read(where / "cpu.cfs_period_us")
                    limits.append(_v1_limit(quota, period))
    if not text:                                            # no /proc/self/cgroup: the root's files only
        limits.append(_v2_limit(_read(root / "cpu.max")))
    limits = [v for v in limits if v is not None]
    return min(limits) if limits else None


def _v2_limit(text: str | None) -> float | None:
    if not text:
        return None
    fields = text.split()
    try:
        return None if fields[0] == "max" else int(fields[0]) / int(fields[1] if len(fields) > 1 else 100_000)
    except (ValueError, ZeroDivisionError, IndexError):
        return None


def _v1_limit(quota: str | None, period: str | None) -> float | None:
    try:
        q, p = int(quota or "-1"), int(period or "0")
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def usable_cores(affinity: int | None = None, limit: float | None = -1.0) -> int:
    """Cores this process can use at all: its affinity mask, capped by the cgroup quota (rounded up).
    ``limit=-1`` (default) reads the quota; ``None`` means no quota."""
    cores = affinity_cores() if affinity is None else int(affinity)
    if limit is not None and limit < 0:
        limit = cgroup_cpu_limit()
    if limit is not None:
        cores = min(cores, max(1, math.ceil(limit - 1e-9)))
    return max(1, cores)


def taken_cores(busy: float) -> int:
    """Whole cores taken by other processes that keep ``busy`` cores' worth busy (see :data:`TAKEN_SHARE`)."""
    return max(0, math.ceil(busy - TAKEN_SHARE))


def free_cores(usable: int, busy: float) -> int:
    """Usable cores not taken by other processes, at least 1."""
    return max(1, int(usable) - taken_cores(busy))


@dataclass(frozen=True)
class ThreadChoice:
    """What :func:`choose_threads` decided and why (recorded in ``config.json``)."""

    threads: int            # torch threads per process
    workers: int            # processes sharing the free cores
    usable: int             # cores usable at all (affinity, quota)
    busy: float | None      # cores' worth of other processes' load at start (None: not read)
    source: str             # "--threads", "OMP_NUM_THREADS" or "free cores"

    @property
    def free(self) -> int:
        return free_cores(self.usable, self.busy or 0.0)

    def describe(self) -> str:
        load = "load not read" if self.busy is None else f"others busy {self.busy:.2f} cores"
        each = f" / {self.workers} workers" if self.workers > 1 else ""
        if self.source != "free cores":
            return f"{self.threads} ({self.source}; {self.usable} usable cores, {load})"
        return f"{self.threads} ({self.free} of {self.usable} usable cores free{each}; {load})"


def requested_threads(threads=None, env=None) -> tuple[int | None, str]:
    """An explicit thread count and where it came from: ``--threads``, else ``OMP_NUM_THREADS``."""
    env = os.environ if env is None else env
    if threads is not None:
        return _positive(threads, "--threads"), "--threads"
    omp = str(env.get("OMP_NUM_THREADS", "")).strip()
    if omp:
        try:
            return _positive(int(omp.split(",")[0]), "OMP_NUM_THREADS"), "OMP_NUM_THREADS"
        except ValueError:
            pass            # not a number: torch ignores it too
    return None, "free cores"


def _positive(value, what: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise MibenchError(f"{what} must be a positive integer, got {value!r}") from None
    if n < 1 or (isinstance(value, float) and value != n):
        raise MibenchError(f"{what} must be a positive integer, got {value}")
    return n


def choose_threads(threads=None, workers: int = 1, *, usable: int | None = None, busy: float | None = None,
                   env=None) -> ThreadChoice:
    """Torch threads for each of ``workers`` processes sharing this machine's free cores (the module
    docstring's rule).  ``usable`` and ``busy`` are read where not given (``busy`` only when no
    thread count is requested); pass them to decide without measuring."""
    workers = max(1, int(workers))
    usable = usable_cores() if usable is None else max(1, int(usable))
    n, source = requested_threads(threads, env)
    if n is not None:
        return ThreadChoice(n, workers, usable, busy, source)
    if busy is None:
        busy = LoadProbe().busy_cores()
    return ThreadChoice(max(1, free_cores(usable, busy or 0.0) // workers), workers, usable, busy, source)


def max_workers(requested: int, free: int, threads: int = 1) -> int:
    """Worker processes that fit the free cores at ``threads`` threads each: at most ``requested``,
    at least 1, and ``workers x threads <= free`` whenever one worker fits."""
    return max(1, min(int(requested), int(free) // max(1, int(threads))))


class LoadProbe:
    """Other processes' CPU load on this process's usable CPUs, read from its creation to
    :meth:`busy_cores` (at least :data:`MIN_WINDOW` seconds), without this process's own time.

    Reads ``/proc/stat``; where it is missing (not Linux) the load counts as 0."""

    def __init__(self, stat: str | Path = "/proc/stat", clock=time.monotonic, own_times=os.times, cpus=None,
                 niced: bool | None = None):
        self.stat, self.clock, self.own_times = Path(stat), clock, own_times
        if cpus is None:
            try:
                cpus = os.sched_getaffinity(0)
            except AttributeError:  # pragma: no cover
                cpus = None
        self.cpus = None if cpus is None else {f"cpu{i}" for i in cpus}
        self.niced = _niced() if niced is None else bool(niced)
        self.start = self._sample()

    def _sample(self):
        text = _read(self.stat)
        if text is None:
            return None
        counts = _busy_ticks(text, self.cpus, self.niced)
        t = self.own_times()
        return self.clock(), counts, t.user, t.system

    def busy_cores(self, min_window: float = MIN_WINDOW) -> float:
        """Cores' worth of CPU time other processes used during the window."""
        if self.start is None:
            return 0.0
        wait = min_window - (self.clock() - self.start[0])
        if wait > 0:
            time.sleep(wait)
        end = self._sample()
        if end is None:
            return 0.0
        return others_busy(self.start, end, self.niced, ticks_per_second())


def _niced() -> bool:
    try:
        return os.getpriority(os.PRIO_PROCESS, 0) > 0
    except (AttributeError, OSError):  # pragma: no cover
        return False


def ticks_per_second() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover
        return 100


def _busy_ticks(text: str, cpus: set | None, niced: bool) -> tuple[int, int]:
    """(busy ticks counted, of which 'nice') summed over the ``cpus`` lines of ``/proc/stat``
    (all per-CPU lines when ``cpus`` is None): user, system, irq, softirq, steal, and nice when
    this process is niced itself."""
    busy = nice = 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu" or (cpus is not None and name not in cpus):
            continue
        v = [int(x) for x in rest.split()]
        v += [0] * (8 - len(v))
        user, nice_t, system, _idle, _iowait, irq, softirq, steal = v[:8]
        busy += user + system + irq + softirq + steal + (nice_t if niced else 0)
        nice += nice_t
    return busy, nice


def others_busy(start, end, niced: bool, hz: int) -> float:
    """Cores' worth of other processes' busy time between two samples ``(time, (busy, nice) ticks,
    own user s, own system s)``.  This process's own time is always in the counted columns (its
    user time is in 'nice' when it is niced, and 'nice' is counted then), so it is taken out whole."""
    t0, (b0, _), u0, s0 = start
    t1, (b1, _), u1, s1 = end
    window = t1 - t0
    if window <= 0:
        return 0.0
    own = (s1 - s0) + (u1 - u0)
    return max(0.0, ((b1 - b0) / hz - own) / window)


@contextlib.contextmanager
def torch_threads(threads: int | None):
    """Run the block with torch's intra-op threads at ``threads`` (None or 0: the caller's count); the
    caller's count comes back afterwards, also when the block raises."""
    import torch

    old = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.set_num_threads(old)


@contextlib.contextmanager
def using_threads(threads: int, rule: str | None = None):
    """Run the block with torch's intra-op threads at ``threads`` (``rule``: how they were chosen, for
    :func:`thread_setting`); the previous count and record come back afterwards, so a command called
    in-process (``mibench.cli.main``, a sweep cell run by its driver) leaves the caller's setting alone."""
    global _RULE
    old_rule, _RULE = _RULE, rule or f"{int(threads)}"
    try:
        with torch_threads(int(threads)):
            yield
    finally:
        _RULE = old_rule


def thread_setting() -> str | None:
    """How this process's torch threads were chosen (for config.json); ``None`` outside :func:`using_threads`."""
    return _RULE
