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


def test_sigterm_marks_the_run_interrupted(tmp_path):
    """SIGTERM during training: the run stops at the next step, config.json says interrupted,
    exit 143 with one line.  The flag-and-check design makes this deterministic: the signal is
    sent only once config.json says 'running', when the handler is already installed."""
    import json
    import signal
    import time

    out = tmp_path / "r"
    p = subprocess.Popen([sys.executable, "-m", "mibench.cli", "run", "--steps", "1000000", "--hidden", "8",
                          "--layers", "0", "--batch-size", "8", "--out", str(out), "--quiet", "--device", "cpu"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            try:
                if json.loads((out / "config.json").read_text())["status"] == "running":
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 143, err
    lines = [line for line in err.strip().splitlines() if line]
    assert lines == ["mibench: terminated (SIGTERM); what ran is marked interrupted (--resume continues it)"], err
    assert json.loads((out / "config.json").read_text())["status"] == "interrupted"
    assert not (out / "summary.csv").exists()
