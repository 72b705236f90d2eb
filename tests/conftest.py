import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

# Tests read the real datasets from ../shared/data unless MIBENCH_DATA already points elsewhere.
if "MIBENCH_DATA" not in os.environ and SHARED_DATA.is_dir():
    os.environ["MIBENCH_DATA"] = str(SHARED_DATA)

# pyproject.toml's addopts run the suite in pytest-xdist workers, one per usable core (at most
# MAX_WORKERS).  Each worker then takes one torch thread, and OMP_NUM_THREADS=1 passes that on to the
# runs and subprocesses the tests start, so that the workers never wait on each other's cores (a
# torch thread waiting for a core another process holds stalls the rest, mibench/utils/threads.py).
# One process alone (`-n 0`, or one core) keeps two threads where there are two cores.
MAX_WORKERS = 4
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
else:
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per core this process may use (affinity mask), at most MAX_WORKERS
    (every worker loads torch and the test data)."""
    from mibench.utils.threads import usable_cores

    return max(1, min(MAX_WORKERS, usable_cores()))


@pytest.fixture
def gaussian_pair():
    """(x, y, rho, dim) with a known optimal critic."""

    def make(n, dim, mi_bits, seed=0):
        from mibench.tasks import gaussian_rho, make_task

        task = make_task("gaussian", dim=dim)
        g = torch.Generator().manual_seed(seed)
        x, y = task.sample(n, mi_bits, g)
        return x.double(), y.double(), gaussian_rho(dim, mi_bits), dim

    return make


@pytest.fixture
def packaged_baseline_estimators():
    """task -> the estimators of the baselines packaged in mibench (mibench/analysis/packaged/)."""
    from mibench.analysis import baselines

    out = {}
    for run in baselines.load_packaged()["runs"]:
        cfg = run["config"]["config"]
        out.setdefault(cfg["task"], set()).update(cfg["estimators"])
    return out


@pytest.fixture(scope="module")
def isolated_cache(tmp_path_factory):
    """A private, empty MIBENCH_CACHE for a test module, and one torch thread (on a shared 2-core
    box one thread is faster than two contended ones); both restored afterwards."""
    old = os.environ.get("MIBENCH_CACHE")
    os.environ["MIBENCH_CACHE"] = str(tmp_path_factory.mktemp("mibench-cache"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
    if old is None:
        os.environ.pop("MIBENCH_CACHE", None)
    else:
        os.environ["MIBENCH_CACHE"] = old
