import subprocess
import sys

import pytest

from mibench.cli import main


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mibench.cli", *args], capture_output=True, text=True)


@pytest.mark.parametrize("args,match", [
    (["run", "--task", "nope"], "unknown task 'nope'"),
    (["run", "--task", "visoin"], "did you mean 'vision'?); `mibench list` shows the"),   # not ~80 names in a line
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


def _with_stdout_closed(*args) -> subprocess.CompletedProcess:
    """``mibench ARGS`` whose stdout is a pipe nobody reads any more (``mibench list | head`` after
    head has exited): its reader end is closed before the command writes."""
    import os

    r, w = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "mibench.cli", *args], stdout=w, stderr=subprocess.PIPE,
                            text=True)
    os.close(w)
    os.close(r)
    _, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", err)


def test_list_into_a_closed_pipe_ends_quietly():
    p = _with_stdout_closed("list")
    assert (p.returncode, p.stderr) == (0, "")


def test_every_command_ends_quietly_when_its_reader_goes_and_keeps_a_decided_exit_code(tmp_path):
    """The class: help, lists and reports, whether the pipe breaks mid-command or at the last flush,
    end quietly; a result already decided keeps its exit code (the gate's 1 is not turned into 0)."""
    from fake_runs import write_fake_run

    rows = [{"estimator": "nwj", "true_mi": 2.0, "bias": b, "variance": 0.01, "mse": b * b + 0.01} for b in (-0.1,)]
    base = write_fake_run(tmp_path / "base", rows)
    worse = write_fake_run(tmp_path / "worse", [{**rows[0], "bias": -2.0, "mse": 4.01}])
    for args, code in ((["--help"], 0), (["run", "--help"], 0), (["sweep", "--list-presets"], 0),
                       (["leaderboard", str(base)], 0), (["compare", str(base), str(base)], 0),
                       (["compare", str(worse), str(base)], 1)):
        p = _with_stdout_closed(*args)
        assert (p.returncode, p.stderr) == (code, ""), (args, p.returncode, p.stderr)


def test_a_broken_pipe_that_is_not_stdout_is_still_an_error(monkeypatch, capsys):
    """Only a closed stdout ends quietly: a BrokenPipeError from anywhere else (a worker's pipe) is one
    line and exit 2, as before."""
    import mibench.cli.run as run_cli_module

    def broken(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(run_cli_module, "cmd_list", broken)
    assert main(["list"]) == 2
    assert capsys.readouterr().err.strip() == "mibench: error: cannot use: Broken pipe"


# one digit at 8 x 8 pixels: ksg's number on 64 + 64 dimensions from 200 pairs is a plausible one
VISION_RUN = ["run", "--task", "vision", "--ds", "1", "--side", "8", "--estimator", "ksg", "--n", "200", "--seeds", "0",
              "--mi", "1", "--timeout", "0", "--no-plot"]


def _data_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("mibench: data:")]


def test_a_run_says_at_its_start_which_data_it_uses(tmp_path, monkeypatch, capsys):
    from pathlib import Path

    shared = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    if not (shared / "mnist").is_dir():
        pytest.skip("the full MNIST data is not in ../shared/data")
    monkeypatch.setenv("MIBENCH_DATA", str(shared))
    assert main([*VISION_RUN, "--out", str(tmp_path / "r")]) == 0
    # the record names the folder relative to $MIBENCH_DATA (committed records carry no machine's paths)
    assert _data_lines(capsys) == ["mibench: data: full data ($MIBENCH_DATA/mnist, train split, md5 verified); "
                                   "data directory from MIBENCH_DATA"]


def test_every_data_backed_run_names_its_data_and_no_other_does(tmp_path, monkeypatch, capsys):
    """The class: the shipped subset says so with its folder, the full data where its directory came
    from (--data-dir, MIBENCH_DATA, the user cache), a task without a dataset prints no data line."""
    from mibench.cli.run import data_line
    from mibench.data.embedded import EMBEDDED_DIR

    monkeypatch.setenv("MIBENCH_DATA", "embedded")
    assert main([*VISION_RUN, "--out", str(tmp_path / "r")]) == 0
    (line,) = _data_lines(capsys)
    assert line.startswith("mibench: data: embedded subset (") and f"shipped with mibench ({EMBEDDED_DIR})" in line
    assert main(["run", "--task", "gaussian", "--estimator", "ksg", "--n", "200", "--seeds", "0", "--mi", "1",
                 "--timeout", "0", "--no-plot", "--out", str(tmp_path / "g")]) == 0
    assert _data_lines(capsys) == []
    mixed = {"data_source": "images: full data (/d/mnist, train split, md5 verified); text: embedded subset (x)"}
    assert data_line(mixed, "/d").endswith("; data directory from --data-dir; the small subset shipped with mibench "
                                           f"({EMBEDDED_DIR}), not the full data")
    monkeypatch.delenv("MIBENCH_DATA")
    assert data_line(mixed).split("; ")[2] == "data directory from the user cache"
