"""Every size parameter has an upper limit (issue 34; docs/run-directory.md#size-limits): a value above
its hard cap, or one whose memory estimate exceeds the memory available, is refused in one line
(exit 2) before anything is allocated or written -- never a MemoryError / OverflowError traceback or
an OOM kill."""
from __future__ import annotations

import numpy as np
import pytest

import mibench
from mibench.cli import main
from mibench.errors import MibenchError
from mibench.utils import limits

GB = 10**9
TINY = ["run", "--device", "cpu", "--quiet", "--no-plot"]
GAUSSIAN = ["--task", "gaussian", "--dim", "2"]


@pytest.fixture
def memory(monkeypatch):
    """This machine has 8 GB available (the refusals do not depend on the machine running the test)."""
    monkeypatch.setattr(limits, "host_available", lambda: 8 * GB)


def _refused(capsys, args, out, *needles):
    task = [] if "--task" in args else GAUSSIAN if "--dim" not in args else GAUSSIAN[:2]
    code = main([*TINY, *task, *args, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.count("\n") == 0 and err.startswith("mibench: error:") and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    assert not out.exists()                 # refused before the run directory is claimed
    return err


@pytest.mark.parametrize("args,needles", [
    (["--steps", str(10**12)], ["--steps 1,000,000,000,000", "limit of 1,000,000,000", "size-limits"]),
    (["--steps", "9" * 30], ["--steps 1e+30", "limit"]),
    (["--batch-size", str(10**7)], ["--batch-size 10,000,000", "limit of 131,072"]),
    (["--hidden", str(10**7)], ["--hidden 10,000,000", "limit"]),
    (["--layers", str(10**6)], ["--layers 1,000,000", "limit of 1,000"]),
    (["--critic", "separable", "--embed", str(10**9)], ["--embed", "limit"]),
    (["--n", str(10**11), "--estimator", "ksg"], ["--n 100,000,000,000", "limit of 1,000,000,000"]),
    (["--n", "2000", "--estimator", "smile", "--steps", str(10**12)], ["--steps", "limit"]),
    (["--n", "2000", "--estimator", "smile", "--hidden", str(10**7)], ["--hidden", "limit"]),
    (["--task", "vision", "--ds", "5000"], ["ds must be an integer in [1, 4096]"]),
])
def test_above_the_hard_cap_is_one_line(tmp_path, capsys, args, needles):
    _refused(capsys, args, tmp_path / "r", *needles)


@pytest.mark.parametrize("args,flag,part", [
    (["--steps", str(10**8)], "--steps", "the per-step records"),
    (["--batch-size", "20000"], "--batch-size", "activations"),
    (["--hidden", "60000"], "--hidden", "critic parameters"),
    (["--layers", "900", "--hidden", "2048"], "--layers", "critic parameters"),
    (["--dim", str(10**8)], "the task's dimensions", "critic parameters"),
    (["--n", str(5 * 10**8), "--estimator", "ksg"], "--n", "the dataset"),
    (["--n", "5000", "--estimator", "smile", "--hidden", "60000"], "--hidden", "critic parameters"),
])
def test_what_cannot_fit_in_memory_is_one_line(tmp_path, capsys, memory, args, flag, part):
    err = _refused(capsys, args, tmp_path / "r", "needs about", "more than the 8.0 GB available", part)
    assert f"lower {flag}" in err, err


def test_python_estimate_refuses_sizes_in_one_error(memory):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))
    y = x + rng.normal(size=(300, 2))
    with pytest.raises(MibenchError, match=r"steps 1,000,000,000,000 is above mibench's limit"):
        mibench.estimate(x, y, steps=10**12)
    with pytest.raises(MibenchError, match="steps .* is above"):
        mibench.estimate(x, y, steps=10**30)          # an int64 overflow is a limit, not a TypeError
    with pytest.raises(MibenchError, match="hidden .* is above"):
        mibench.estimate(x, y, hidden=10**7)
    with pytest.raises(MibenchError, match="layers .* is above"):
        mibench.estimate(x, y, layers=10**5, steps=5)
    with pytest.raises(MibenchError, match=r"needs about .* lower hidden"):
        mibench.estimate(x, y, hidden=60_000)
    with pytest.raises(MibenchError, match=r"needs about .* lower steps"):
        mibench.estimate(x, y, steps=10**9 - 1)


def test_sizes_that_fit_still_run(tmp_path, memory):
    assert main([*TINY, *GAUSSIAN, "--steps", "40", "--hidden", "8", "--layers", "0", "--batch-size", "16", "--mi", "1",
                 "--out", str(tmp_path / "r")]) == 0


def test_unknown_memory_leaves_only_the_hard_caps(monkeypatch):
    monkeypatch.setattr(limits, "host_available", lambda: None)
    limits.check_fits([limits.Need("huge", 10**18, "--x", on_device=False)])      # nothing to compare with
    with pytest.raises(MibenchError, match="limit"):
        limits.hard_limit(10**10, "--steps")


def test_available_memory_is_read_from_the_system():
    avail, where = limits.available_memory()
    assert where == "available in host memory"
    assert avail is None or avail > 0


def test_estimates_of_known_configurations():
    """The documented estimates: the paper's critic is small; the vision task's build no longer
    grows with ds (the exact check's masks were ds^2 x 784 floats: 52.6 GB at ds 4096)."""
    from mibench.critics import critic_sizes
    from mibench.tasks.vision import RENDER_CHUNK_BYTES, memory_needs

    sizes = {"batch": 64, "hidden": 256, "layers": 2, "embed": 32}
    names = {"batch": "--batch-size", "hidden": "--hidden", "layers": "--layers"}
    needs = limits.critic_needs(critic_sizes("joint", 10, 10), sizes, names)
    assert sum(n.nbytes for n in needs) < 100 * 10**6
    big = sum(n.nbytes for n in memory_needs((1, 64, 64), 64, 12_660))
    small = sum(n.nbytes for n in memory_needs((1, 2, 5), 64, 12_660))
    assert big - small < 10**8 and big < 2 * RENDER_CHUNK_BYTES + 2 * GB
