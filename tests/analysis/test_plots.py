"""Plots: files are real PNGs, axes are labelled (in bits), legends and titles present."""
import struct

import numpy as np
import pandas as pd
import pytest
from fake_runs import write_fake_run

from mibench.analysis.leaderboard import collect_unique, per_seed_rows
from mibench.cli import main
from mibench.plots import plot_metric_bars, plot_staircase, plot_sweep, sweep_axes


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
    runs = collect_unique([ds_sweep / "gaussian_dim4_s0", ds_sweep / "gaussian_dim4_s1"]).runs
    samples = pd.DataFrame(per_seed_rows(runs))
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
    df = pd.DataFrame(per_seed_rows(collect_unique([ds_sweep]).runs))
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


def test_plot_and_leaderboard_on_only_interrupted_runs_say_so(tmp_path, capsys):
    """A folder whose runs are all interrupted said 'no complete run directories' and nothing else."""
    for seed in (0, 1):
        write_fake_run(tmp_path / f"r{seed}", [{"estimator": "nwj", "true_mi": 2.0, "bias": 0.1, "variance": 0.0,
                                                "mse": 0.01}], seed=seed, status="interrupted")
    for cmd in (["plot", str(tmp_path)], ["leaderboard", str(tmp_path)]):
        assert main(cmd) == 2
        err = capsys.readouterr().err
        assert "no complete run directories" in err and "2 incomplete" in err and "--resume" in err, err


def test_setups_differing_in_a_field_outside_the_name_get_their_own_figures(tmp_path, capsys):
    """Two sample runs differing only in n (and lr, precision, ... for streamed ones) wrote one file name
    twice: the first setup's figure was lost, and the title showed 'joint 0x0 · batch 0 · 0 steps'."""
    for n in (200, 300):
        assert main(["run", "--task", "gaussian", "--dim", "2", "--estimator", "gaussian", "--mi", "2", "--n", str(n),
                     "--seeds", "0", "--timeout", "0", "--quiet", "--no-plot", "--out", str(tmp_path / f"n{n}")]) == 0
    capsys.readouterr()
    assert main(["plot", str(tmp_path), "-o", str(tmp_path / "figs")]) == 0
    metrics = sorted(p.name for p in (tmp_path / "figs").glob("metrics_*.png"))
    assert len(metrics) == 2 and metrics[0].endswith("_n200.png") and metrics[1].endswith("_n300.png"), metrics


def test_a_sweep_trend_never_averages_settings_that_are_not_its_axis(tmp_path, monkeypatch):
    """A sweep over dim and steps (one seed each): the ds trend drew one point per ds at the mean of the two
    step counts, titled "2 seeds". Each step count is now its own series, named after the field, and every
    point holds one seed."""
    import mibench.plots as plots
    from mibench.analysis.run_figures import plot_results

    for dim in (2, 3):
        for steps, scale in ((50, 4.0), (500, 1.0)):
            write_fake_run(tmp_path / "sweep" / f"d{dim}_n{steps}", _rows(0, scale=scale), task_params={"dim": dim},
                           steps=steps, ds=dim, dr=dim)
    drawn = {}
    real = plots.plot_sweep

    def spy(df, axis, path, title="", style=None):
        drawn[axis] = (df.copy(), style)
        return real(df, axis, path, title=title, style=style)

    monkeypatch.setattr(plots, "plot_sweep", spy)
    plot_results(tmp_path / "sweep", tmp_path / "figs")
    df, style = drawn["ds"]
    assert style == "setup" and set(df["setup"]) == {"steps 50", "steps 500"}
    per_point = df.groupby(["ds", "setup", "estimator", "true_mi"]).size()
    assert per_point.max() == 1 and len(per_point) == 2 * 2 * 2 * 2


def test_plot_command_on_a_real_run(tmp_path):
    from mibench.protocols.stream.run import RunConfig, run

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


# ------------------------------------------------------------------ what the figures draw (issue 16)

from mibench import plots  # noqa: E402

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_smoothing_restarts_at_every_level():
    """A level's line starts from that level's estimates: with estimates equal to the truth the
    per-level EWM is exact, while one EWM over the whole run lags after every step up."""
    true_mi = np.repeat([2.0, 4.0, 6.0], 50)
    sm = plots.smooth_per_level(true_mi, true_mi, span=20, min_periods=1)
    np.testing.assert_allclose(sm, true_mi)
    assert plots.ewm(true_mi, 20)[50] < 3.0                    # the old, global EWM: lagging
    sm = plots.smooth_per_level(true_mi, true_mi, span=40)     # default: starts after span/10 steps
    assert np.isnan(sm[[0, 1, 2, 50, 52]]).all() and np.isfinite(sm[[3, 4, 53]]).all()
    est = true_mi + np.random.default_rng(0).normal(0, 0.5, true_mi.size)
    est[120:] = np.nan                                          # diverged: NaN from step 120
    sm = plots.smooth_per_level(est, true_mi, span=20, min_periods=1)
    np.testing.assert_allclose(sm[50:120], plots.ewm(est[50:100], 20).tolist() + plots.ewm(est[100:120], 20).tolist())
    assert np.isnan(sm[120:]).all()                             # not the last average repeated
    assert plots.level_segments(true_mi).tolist() == [0, 50, 100, 150]


def test_one_fixed_colour_per_estimator():
    names = ["nwj", "js", "infonce", "dv", "mine", "smile-1", "smile-5", "smile-inf"]
    colours = [plots.estimator_color(n) for n in names]
    assert len(set(colours)) == 8
    assert plots.palette(reversed(names)) == dict(zip(names, colours))       # order does not matter
    # a plug-in's colour: from a hash of its name, the same in another process (no PYTHONHASHSEED)
    import colorsys
    import os
    import subprocess
    import sys

    c = plots.estimator_color("my_pkg.mod:MyEstimator")
    out = subprocess.run([sys.executable, "-c", "from mibench.plots import estimator_color as c; "
                          "print(c('my_pkg.mod:MyEstimator'))"], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "123"}).stdout.strip()
    assert out == c and c != plots.estimator_color("my_pkg.mod:Other")
    rgb = [int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    assert colorsys.rgb_to_hsv(*rgb)[1] >= 0.5                   # never grey/black like the true MI


def _staircase_case():
    true_mi = np.repeat([2.0, 4.0, 6.0, 8.0], 100)
    rng = np.random.default_rng(1)
    est = np.vstack([true_mi + rng.normal(0, 0.3, 400),                      # smile-5 tracks (crosses 6)
                     np.minimum(true_mi, 5.7) + rng.normal(0, 0.1, 400),     # infonce saturates below 6
                     true_mi + rng.normal(0, 0.3, 400)])                     # dv: diverges at 250
    est[2, 250:] = np.nan
    return ["smile-5", "infonce", "dv"], true_mi, est


def test_staircase_data_divergence_and_ceiling():
    names, true_mi, est = _staircase_case()
    d = plots.staircase_data(names, true_mi, est, ceilings={"infonce": 6.0, "smile-5": float("inf")},
                             diverged={"dv": 250}, span=10)
    step, y, clipped = d.diverged["dv"]
    assert (step, clipped) == (250, False) and y == pytest.approx(d.smoothed[2, 249])
    assert set(d.diverged) == {"dv"} and d.ceilings == [(6.0, "infonce\nceiling\nlog₂K = 6")]
    # inferred from the NaN tail when config.json's record is not given
    assert plots.divergence_steps(names, est) == {"dv": 250}
    # an estimate that blew up off the scale before diverging: marker on the axis edge
    est[2, 240:250] = 1e6
    d = plots.staircase_data(names, true_mi, est, diverged={"dv": 250}, span=10)
    assert d.diverged["dv"] == (250, d.ylim[1], True)


def test_staircase_figure_marks_divergence_and_keeps_the_ceiling_label_off_the_curves(tmp_path):
    names, true_mi, est = _staircase_case()
    fig = plots.draw_staircase(names, true_mi, est, "t", {"infonce": 6.0}, span=10, diverged={"dv": 250})
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.lines}
    assert {"smile-5", "infonce", "dv (diverged at step 250)", "true MI"} <= set(lines)
    assert lines["dv (diverged at step 250)"].get_color() == plots.estimator_color("dv")
    marker = [ln for ln in ax.lines if ln.get_marker() == "X"]
    assert len(marker) == 1 and marker[0].get_xdata()[0] == 250
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    label = [t for t in ax.texts if "ceiling" in t.get_text()]
    assert len(label) == 1
    box, plot_area = label[0].get_window_extent(renderer), ax.get_window_extent(renderer)
    assert box.x0 > plot_area.x1                                   # in the right margin: over no curve
    centre_y = ax.transData.inverted().transform(((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2))[1]
    assert centre_y == pytest.approx(6.0, abs=0.3)                 # at the ceiling's height
    assert box.x1 <= fig.bbox.x1 + 1                               # and inside the figure
    plots.save_figure(fig, tmp_path / "s.png")
    assert png_size(tmp_path / "s.png")[2] > 5_000


def test_metric_scale_on_table3():
    """Table 3's Gaussian panel: DV's variance (2.6e7 bits²) would flatten the rest -> log; its bias
    (2142 bits) -> symlog; vision's variance has no such outlier -> linear."""
    lb = pd.read_csv(REPO / "results" / "table3" / "leaderboard.csv")
    g, v = lb[lb.task == "gaussian"], lb[lb.task == "vision"]
    assert plots.metric_scale(g.variance, "variance") == ("log", {})
    assert plots.metric_scale(g.mse, "mse") == ("log", {})
    assert plots.metric_scale(g.bias, "bias") == ("symlog", {"linthresh": 1.0})
    assert plots.metric_scale(v.variance, "variance") == ("linear", {})
    assert plots.metric_scale([0.1, 0.2, 0.3], "mse") == ("linear", {})


def test_metric_bars_scales_and_colours(tmp_path):
    from mibench.analysis.leaderboard import collect_unique

    rows = pd.DataFrame(per_seed_rows(collect_unique([REPO / "results" / "table3"]).runs))
    fig = plot_metric_bars(rows[rows.task == "gaussian"], tmp_path / "g.png")
    assert [ax.get_yscale() for ax in fig.axes[:3]] == ["symlog", "log", "log"]
    assert "log scale" in fig.axes[1].get_ylabel() and "symlog" in fig.axes[0].get_ylabel()
    legend = fig.axes[2].get_legend()
    got = {t.get_text(): h.get_facecolor() for t, h in zip(legend.get_texts(), legend.legend_handles)}
    import matplotlib.colors as mcolors

    assert len(got) == 8
    for name, rgba in got.items():
        assert mcolors.to_hex(rgba) == plots.estimator_color(name)
    fig = plot_metric_bars(rows[rows.task == "vision"], tmp_path / "v.png")
    assert [ax.get_yscale() for ax in fig.axes[:3]] == ["linear", "linear", "linear"]


def test_metric_bars_from_leaderboard_rows(tmp_path):
    """Aggregated rows (the report's figure): each bar is the row's value, in the order given, with
    the row's 95% half-width as its error bar where there is one; the seed count from n_seeds."""
    from matplotlib.container import ErrorbarContainer

    rows = [{"estimator": e, "true_mi": lv, "n_seeds": 3, "bias": b * lv, "variance": 0.1 * lv, "mse": (b * lv) ** 2,
             "bias_ci95": 0.05 if e == "nwj" else float("nan"), "variance_ci95": None, "mse_ci95": ""}
            for e, b in (("nwj", -0.2), ("dv", 0.3)) for lv in (2.0, 4.0)]
    fig = plot_metric_bars(rows, tmp_path / "m.png", title="t", aggregated=True, order=["nwj", "dv"])
    assert png_size(tmp_path / "m.png")[2] > 5_000
    assert [t.get_text() for t in fig.axes[2].get_legend().get_texts()] == ["nwj", "dv"]
    heights = {round(p.get_x() + p.get_width() / 2, 6): p.get_height() for p in fig.axes[0].patches if p.get_width()}
    for r in rows:
        x = plots.bar_centre([2.0, 4.0].index(r["true_mi"]), ["nwj", "dv"].index(r["estimator"]), 2)
        assert heights[round(x, 6)] == pytest.approx(r["bias"])
    errs = [seg for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)
            for seg in c.lines[2][0].get_segments()]
    assert sorted(round(s[1][1] - s[0][1], 9) for s in errs) == [0.1, 0.1]        # nwj's two levels only
    assert not any(isinstance(c, ErrorbarContainer) for c in fig.axes[1].containers)
    assert "3 seeds · error bars: 95% t-interval" in fig._suptitle.get_text()


def test_sweep_staircase_joins_split_cells(tmp_path):
    """A sweep that split a setup's estimators over two cells gets one staircase with all of them."""
    rows = [{"estimator": e, "true_mi": lv, "bias": -0.1, "variance": 0.01, "mse": 0.02}
            for e in ("nwj", "dv") for lv in (2.0, 4.0)]
    root = tmp_path / "sweep"
    write_fake_run(root / "a", [r for r in rows if r["estimator"] == "nwj"])
    write_fake_run(root / "b", [r for r in rows if r["estimator"] == "dv"])
    from mibench.analysis.run_figures import plot_results
    from mibench.protocols.stream.records import staircase_from_runs

    names, true_mi, mat, *_ = staircase_from_runs([root / "a", root / "b"])
    assert names == ["nwj", "dv"] and mat.shape == (2, 100) and true_mi.tolist() == [2.0] * 50 + [4.0] * 50
    written = plot_results(root)
    stairs = [p for p in written if p.name.startswith("staircase_")]
    assert len(stairs) == 1 and stairs[0].name.endswith("_s0.png") and png_size(stairs[0])[2] > 5_000


BACKEND_SCRIPT = """
import matplotlib
matplotlib.use("svg")
import matplotlib.pyplot as plt
import numpy as np
before = dict(matplotlib.rcParams)
from mibench.plots import plot_staircase, plot_metric_bars
plot_staircase("s.png", ["nwj"], np.repeat([2.0, 4.0], 20), np.ones((1, 40)), "t", {"nwj": 3.0})
plot_metric_bars([{"estimator": "nwj", "true_mi": 2.0, "bias": 0.1, "variance": 0.1, "mse": 0.2}], "m.png")
after = dict(matplotlib.rcParams)
print(matplotlib.get_backend(), plt.get_fignums(), [k for k in before if before[k] != after[k]])
"""


def test_plots_leave_the_callers_backend_and_style_alone(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    out = subprocess.run([sys.executable, "-c", BACKEND_SCRIPT], cwd=tmp_path, env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[0] == "svg [] []"
    assert png_size(tmp_path / "s.png")[2] > 1000 and png_size(tmp_path / "m.png")[2] > 1000


def test_metric_bars_mark_a_diverged_estimator_at_its_bar(tmp_path):
    """NWJ diverged at step 60 of 100 (levels 2 | 4 bits): an ✕ at its 4-bit bars, not at 2 bits."""
    import matplotlib.colors as mcolors

    from mibench.analysis.leaderboard import collect_unique

    rows = [{"estimator": e, "true_mi": lv, "bias": -0.2, "variance": 0.1, "mse": 0.2 * k}
            for k, e in ((1, "smile-5"), (2, "nwj"), (3, "dv")) for lv in (2.0, 4.0)]
    write_fake_run(tmp_path / "r", rows, diverged={"nwj": 60})
    df = pd.DataFrame(per_seed_rows(collect_unique([tmp_path / "r"]).runs))
    fig = plot_metric_bars(df, tmp_path / "m.png")
    order = [t.get_text() for t in fig.axes[2].get_legend().get_texts()]
    marks = plots.diverged_bars(df, order, [2.0, 4.0])
    assert [(e, lv, k) for _, e, lv, k in marks] == [("nwj", 4.0, 1)]
    nwj = plots.estimator_color("nwj")
    centres = sorted(p.get_x() + p.get_width() / 2 for p in fig.axes[2].patches
                     if p.get_height() and mcolors.to_hex(p.get_facecolor()) == nwj)
    assert centres[1] == pytest.approx(marks[0][0])         # the ✕ sits under NWJ's 4-bit bar
    drawn = [ln for ln in fig.axes[2].lines if ln.get_marker() == "X"]
    assert len(drawn) == 1 and drawn[0].get_xdata()[0] == pytest.approx(marks[0][0])
    assert any("diverged" in t.get_text() and "nwj at 4 bits" in t.get_text() for t in fig.texts)
