import subprocess
import sys

import pytest

from mibench.cli import main


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mibench.cli", *args], capture_output=True, text=True)


@pytest.mark.parametrize("args,match", [
    (["run", "--task", "nope"], "unknown task 'nope'"),
    (["run", "--estimator", "smiel"], "did you mean 'smile'"),
    (["run", "--critic", "mlp"], "unknown critic"),
    (["run", "--mi", "-1"], ">= 0 bits"),
    (["run", "--mi", "banana"], "--mi must be"),
    (["run", "--task", "gaussian", "--nuisance", "0.5"], "does not take 'nuisance'"),
    (["run", "--steps", "0"], "--steps"),
    (["run", "--device", "cuda:7"], "cuda"),
    (["run", "--precision", "fp16"], "--precision must be one of fp32, bf16, tf32"),
    (["run", "--precision", "tf32", "--device", "cpu"], "tf32 needs a CUDA device"),
    (["sweep", "--task", "gaussian", "--split-estimators", "0"], "split_estimators"),
])
def test_user_mistakes_are_one_line(args, match):
    p = run_cli(*args)
    assert p.returncode == 2
    lines = [l for l in p.stderr.strip().splitlines() if l]
    assert len(lines) == 1 and lines[0].startswith("mibench: error:") and match in lines[0], p.stderr
    assert "Traceback" not in p.stderr


def test_run_writes_outputs_and_table(tmp_path, capsys):
    out = tmp_path / "r"
    code = main(["run", "--task", "gaussian", "--estimator", "smile,infonce", "--steps", "40", "--hidden", "16",
                 "--layers", "1", "--batch-size", "8", "--out", str(out), "--device", "cpu", "--dim", "3"])
    assert code == 0
    text = capsys.readouterr().out
    assert "smile-5" in text and "mse" in text and "infonce cannot exceed" in text
    assert (out / "summary.csv").is_file() and (out / "staircase.png").is_file()


def test_list_mentions_everything(capsys):
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    for word in ("gaussian", "nwj", "js", "infonce", "dv", "mine", "smile-<tau>", "tuba", "inner", "bilinear",
                 "separable", "joint", "3 ReLU layers of 256"):
        assert word in text
