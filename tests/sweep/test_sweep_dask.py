"""The Dask backend for real: a LocalCluster of 2 worker processes on loopback, tiny cells."""
import json
import os

import pytest

from mibench.cli import main
from mibench.records import is_complete, read_config
from mibench.sweep import SweepSpec, run_sweep

distributed = pytest.importorskip("dask.distributed")

TINY = {"tasks": [{"task": "gaussian", "params": {"dim": 2}}], "estimators": ["smile-5", "infonce"],
        "seeds": [0, 1], "steps": 30, "hidden": 8, "layers": 0, "batch_size": 16, "mi": "1,2", "device": "cpu"}


@pytest.fixture(scope="module")
def cluster():
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as c:
        yield c


def test_sweep_on_a_dask_cluster(tmp_path, cluster, capsys):
    out = tmp_path / "sw"
    args = ["sweep", "--task", "gaussian", "--set", "dim=2", "--estimator", "smile,infonce", "--seeds", "0,1",
            "--steps", "30", "--hidden", "8", "--layers", "0", "--batch-size", "16", "--mi", "1,2",
            "--device", "cpu", "--no-plot", "--out", str(out), "--backend", "dask",
            "--address", cluster.scheduler_address]
    assert main(args) == 0
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["backend"] == "dask" and manifest["address"] == cluster.scheduler_address
    assert manifest["status"] == "complete" and len(manifest["cells"]) == 2
    for c in manifest["cells"]:
        # ran in a worker process, files shipped back (no shared filesystem assumed with --address)
        assert c["status"] == "complete" and c["pid"] != os.getpid()
        assert is_complete(out / c["dir"]) and (out / c["dir"] / "estimates.csv").is_file()
        assert read_config(out / c["dir"])["environment"]["torch_threads"] >= 1
    assert (out / "leaderboard.csv").is_file()
    # resume works across backends: everything is already complete
    report = run_sweep(SweepSpec.from_dict(manifest["spec"]), out, resume=True, workers=1, log=lambda s: None)
    assert report.ran == 0 and report.skipped == 2


def test_dask_shared_filesystem_mode(tmp_path, cluster):
    out = tmp_path / "sw"
    spec = SweepSpec.from_dict({**TINY, "seeds": [3]})
    report = run_sweep(spec, out, backend="dask", address=cluster.scheduler_address, shared_fs=True,
                       plot=False, log=lambda s: None)
    assert report.ok and report.ran == 1
    assert is_complete(out / spec.cells()[0].name)
