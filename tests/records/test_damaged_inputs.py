"""A results or data file that is empty, cut off, garbage or edited is refused in one line with
exit code 4 -- never read as a wrong number, never a traceback; the regression gate cannot pass
vacuously (../shared/reports/new-user-defects.md, sections 1 and 5)."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from fake_runs import write_fake_run

from mibench.cli import main

ROWS = [{"estimator": e, "true_mi": lv, "bias": b, "variance": 0.01, "mse": b * b + 0.01}
        for e, b in (("nwj", -0.5), ("smile-5", -0.1)) for lv in (2.0, 4.0)]


def one_line(capsys, *needles) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("mibench: error:") and "Traceback" not in err, err
    for n in needles:
        assert n in err, err
    return err


@pytest.fixture
def run_dir(tmp_path):
    return write_fake_run(tmp_path / "runs" / "r", ROWS)


@pytest.mark.parametrize("content,needle", [
    ("", "is empty"),
    ("task,estimator,critic,true_mi,mean_estimate,bias,variance,mse,steps\n", "has no rows"),
    ("task,estimator,critic,true_mi,mean_estimate,bias,variance,mse,steps\ngaussian,nwj,joint,2,1.5,-0.5,0.01,1.465",
     "truncated"),
    ("hello,world\n1,2\n", "missing columns"),
    ("task,estimator,critic,true_mi,mean_estimate,bias,variance,mse,steps\ngaussian,nwj,joint,2,1.5,-0.5,0.01,abc,50\n",
     "mse = 'abc' is not a number"),
    ("task,estimator,critic,true_mi,mean_estimate,bias,variance,mse,steps\ngaussian,nwj,joint,2,1.5\n", "fields"),
])
def test_leaderboard_refuses_a_damaged_summary(run_dir, tmp_path, capsys, content, needle):
    (run_dir / "summary.csv").write_text(content)
    assert main(["leaderboard", str(run_dir.parent), "-o", str(tmp_path / "lb.csv")]) == 4
    one_line(capsys, needle, "summary.csv")
    assert not (tmp_path / "lb.csv").exists()


RUN_ARGS = ["run", "--task", "gaussian", "--dim", "2", "--estimator", "smile", "--steps", "40", "--hidden", "8",
            "--layers", "0", "--batch-size", "16", "--mi", "1", "--device", "cpu", "--quiet", "--no-plot"]


def test_an_edited_file_of_a_checksummed_run_is_refused(tmp_path, capsys):
    out = tmp_path / "runs" / "real"
    assert main([*RUN_ARGS, "--out", str(out)]) == 0
    assert set(json.loads((out / "config.json").read_text())["files"]) == {"estimates.csv", "summary.csv"}
    text = (out / "summary.csv").read_text()
    (out / "summary.csv").write_text(text.replace(text.splitlines()[1].split(",")[4], "9.9", 1))  # a neat number
    assert main(["leaderboard", str(out)]) == 4
    one_line(capsys, "does not match the checksum")
    # --resume of the complete run checks its files too: it said 'complete; nothing to do', exit 0
    args = RUN_ARGS + ["--out", str(out), "--resume"]
    assert main(args) == 4
    one_line(capsys, "is not the complete run it recorded", "summary.csv does not match the checksum", "--overwrite")
    (out / "summary.csv").write_text(text)
    log = (out / "estimates.csv").read_bytes()
    (out / "estimates.csv").write_bytes(log[:300])                    # the per-step log cut short
    assert main(args) == 4
    one_line(capsys, "estimates.csv does not match the checksum")
    (out / "estimates.csv").unlink()                                   # removed, as kept runs do: still complete
    assert main(args) == 0 and "nothing to do" in capsys.readouterr().out


def test_a_run_kept_without_its_per_step_log_still_aggregates(tmp_path, capsys):
    """Committed results keep config.json + summary.csv (results/table3_defaults/runs): the leaderboard
    reads and checks only summary.csv; the plot, which reads estimates.csv, refuses in one line."""
    out = tmp_path / "runs" / "kept"
    assert main(["run", "--task", "gaussian", "--dim", "2", "--estimator", "smile", "--steps", "40", "--hidden", "8",
                 "--layers", "0", "--batch-size", "16", "--mi", "1", "--device", "cpu", "--quiet", "--no-plot",
                 "--out", str(out)]) == 0
    (out / "estimates.csv").unlink()
    assert main(["leaderboard", str(out), "-o", str(tmp_path / "lb.csv")]) == 0
    assert "smile-5" in (tmp_path / "lb.csv").read_text()
    capsys.readouterr()
    assert main(["plot", str(out)]) == 4
    one_line(capsys, "estimates.csv is missing")


def test_plot_refuses_a_truncated_estimates_file(run_dir, capsys):
    data = (run_dir / "estimates.csv").read_bytes()
    (run_dir / "estimates.csv").write_bytes(data[:3000])           # cut mid-line
    assert main(["plot", str(run_dir)]) == 4
    one_line(capsys, "truncated")
    (run_dir / "estimates.csv").write_bytes(data[:data.index(b"\n", 3000) + 1])   # cut at a line end
    assert main(["plot", str(run_dir)]) == 4
    one_line(capsys, "rows where the complete run logged 200")


@pytest.fixture
def boards(tmp_path, run_dir):
    good = tmp_path / "good.csv"
    assert main(["leaderboard", str(run_dir.parent), "-o", str(good)]) == 0
    return good


@pytest.mark.parametrize("which", ["new", "baseline"])
@pytest.mark.parametrize("damage,needle", [
    (lambda t: "", "is empty"),
    (lambda t: t[: len(t) - 7], "truncated"),
])
def test_compare_refuses_damaged_leaderboards(boards, tmp_path, capsys, which, damage, needle):
    bad = tmp_path / "bad.csv"
    bad.write_text(damage(boards.read_text()))
    args = [str(bad), str(boards)] if which == "new" else [str(boards), str(bad)]
    capsys.readouterr()
    assert main(["compare", *args]) == 4
    one_line(capsys, needle)


def test_compare_refuses_an_empty_baseline_instead_of_passing(boards, tmp_path, capsys):
    header_only = tmp_path / "empty.csv"
    header_only.write_text(boards.read_text().splitlines()[0] + "\n")
    capsys.readouterr()
    assert main(["compare", str(boards), str(header_only)]) == 4
    one_line(capsys, "has no rows", "cannot fail")
    assert main(["compare", str(boards), str(boards)]) == 0          # a real baseline still passes
    assert main(["compare", str(header_only), str(boards)]) == 1     # an empty NEW misses every row


@pytest.fixture
def truncated_mnist(tmp_path, monkeypatch):
    src = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mnist"
    if not src.is_dir():
        pytest.skip("MNIST not available")
    root = tmp_path / "data"
    shutil.copytree(src, root / "mnist")
    images = root / "mnist" / "train-images-idx3-ubyte.gz"
    images.write_bytes(images.read_bytes()[:200_000])
    monkeypatch.setenv("MIBENCH_SKIP_MD5", "1")
    monkeypatch.setenv("MIBENCH_CACHE", str(tmp_path / "cache"))
    return root


def test_a_truncated_dataset_file_is_one_line(truncated_mnist, capsys):
    assert main(["run", "--task", "vision", "--data-dir", str(truncated_mnist), "--steps", "5", "--quiet",
                 "--device", "cpu", "--out", str(truncated_mnist.parent / "r")]) == 4
    one_line(capsys, "train-images-idx3-ubyte.gz is truncated or damaged")
    assert not (truncated_mnist.parent / "r").exists()          # nothing written before the data was read
    assert main(["data", "--data-dir", str(truncated_mnist)]) == 4
    out = capsys.readouterr()
    assert "mnist    present, but a file does not match its md5" in out.out and "train-images" in out.err


def test_features_file_mistakes_are_one_line(tmp_path, capsys):
    (tmp_path / "feats").mkdir()
    (tmp_path / "text.npz").write_text("not a zip")
    assert main(["run", "--task", f"features:{tmp_path / 'feats'}", "--steps", "5", "--quiet"]) == 2
    one_line(capsys, "is a directory")
    assert main(["run", "--task", f"features:{tmp_path / 'text.npz'}", "--steps", "5", "--quiet"]) == 2
    one_line(capsys, "not an .npz archive")
    with gzip.open(tmp_path / "g.npz", "wb") as fh:
        fh.write(b"x")
    assert main(["run", "--task", f"features:{tmp_path / 'g.npz'}", "--steps", "5", "--quiet"]) == 2
