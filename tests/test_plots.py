"""Plots: files are real PNGs, axes are labelled (in bits), legends and titles present."""
import struct

import numpy as np
import pandas as pd
import pytest

from mibench.cli import main
from mibench.leaderboard import collect, per_seed_rows
from mibench.plots import plot_metric_bars, plot_staircase, plot_sweep, sweep_axes
from mibench.testing import write_fake_run


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height, len(data)


def _rows(seed, scale=1.0):
    return [{"estimator": e, "true_mi": lv, "bias": (-0.1 - 0.05 * seed) * lv * scale * k,
             "variance": 0.02 * lv * k, "mse": (0.1 * lv * scale * k) ** 2 + 0.02 * lv * k}
            for k, e in ((1, "smile-5"), (2, "nwj")) for lv in (2.0, 4.0)]


@pytest.fixture
def ds_sweep(tmp_path):
    root = tmp_path / "sweep"
    for dim in (1, 4, 16):
        for seed in (0, 1):
            write_fake_run(root / f"gaussian_dim{dim}_s{seed}", _rows(seed, scale=dim ** 0.5),
                           task_params={"dim": dim}, seed=seed, ds=dim, dr=dim)
    return root


def test_metric_bars(ds_sweep, tmp_path):
    samples = pd.DataFrame(per_seed_rows(collect([ds_sweep / "gaussian_dim4_s0", ds_sweep / "gaussian_dim4_s1"]).runs))
    path = tmp_path / "bars.png"
    fig = plot_metric_bars(samples, path, title="gaussian test")
    w, h, size = png_size(path)
    assert w > 800 and h > 300 and size > 10_000
    labels = [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]
    assert labels == [("true MI (bits)", "bias (bits)"), ("true MI (bits)", "variance (bits²)"),
                      ("true MI (bits)", "MSE (bits²)")]
    legend = fig.axes[-1].get_legend()
    assert legend is not None and {t.get_text() for t in legend.get_texts()} == {"smile-5", "nwj"}
    assert "gaussian test" in fig._suptitle.get_text() and "2 seeds" in fig._suptitle.get_text()
    assert len(fig.axes[2].lines) > 0          # error bars (2 seeds -> t intervals)


def test_sweep_plot_and_axis_detection(ds_sweep, tmp_path):
    df = pd.DataFrame(per_seed_rows(collect([ds_sweep]).runs))
    assert sweep_axes(df) == ["ds"]            # dr = ds for Gaussian: not plotted twice
    fig = plot_sweep(df, "ds", tmp_path / "ds.png")
    assert png_size(tmp_path / "ds.png")[2] > 10_000
    assert fig.axes[0].get_xlabel() == "number of information sources ds"
    assert fig.axes[0].get_ylabel() == "MSE (bits²)" and fig.axes[2].get_ylabel() == "bias (bits)"
    assert fig.axes[0].get_title() == "true MI = 2 bits" and fig.axes[0].get_xscale() == "linear"
    fig = plot_sweep(df.assign(critic=np.where(df.ds > 2, "joint", "separable")), "critic", tmp_path / "c.png")
    assert fig.axes[0].get_xlabel() == "critic"


def test_plot_command_on_a_sweep(ds_sweep, capsys):
    assert main(["plot", str(ds_sweep)]) == 0
    out = ds_sweep / "plots"
    files = sorted(p.name for p in out.glob("*.png"))
    assert "sweep_ds_gaussian.png" in files and sum(f.startswith("metrics_") for f in files) == 3
    for f in out.glob("*.png"):
        png_size(f)
    assert main(["plot", str(ds_sweep / "missing")]) == 2


def test_plot_command_on_a_real_run(tmp_path):
    from mibench.harness import RunConfig, run

    run_dir = tmp_path / "run"
    run(RunConfig(task="gaussian", task_params={"dim": 2}, estimators=["smile", "infonce"], hidden=8, layers=0,
                  steps=40, batch_size=16, mi="1,2", device="cpu"), out_dir=run_dir, plot=False)
    assert main(["plot", str(run_dir), "-o", str(tmp_path / "figs")]) == 0
    for name in ("staircase.png", "metrics.png"):
        w, h, size = png_size(tmp_path / "figs" / name)
        assert size > 5_000


def test_staircase_signature_unchanged(tmp_path):
    steps = 50
    true_mi = np.repeat([2.0, 4.0], steps // 2)
    est = np.vstack([true_mi + np.random.default_rng(0).normal(0, 0.3, steps)])
    path = plot_staircase(tmp_path / "s.png", ["smile-5"], true_mi, est, "t", {"smile-5": float("inf")})
    assert path == tmp_path / "s.png" and png_size(path)[2] > 5_000
