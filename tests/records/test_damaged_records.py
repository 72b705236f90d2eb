"""Exit codes of damaged records and data (issue 34), as the exit-code table of docs/run-directory.md
promises: a data file that fails its checksum exits 4; a run directory whose config.json is damaged
(invalid JSON, the wrong shape, a field of the wrong type) is a damaged record (4) for every reader
and for ``--resume``, never an "incomplete" run (2) or a traceback; an output directory that cannot
be written is one line."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from fake_runs import write_fake_run

from mibench.cli import main
from mibench.errors import EXIT_BAD_INPUT, UnreadableInput

ROWS = [{"estimator": "smile-5", "true_mi": lv, "bias": -0.1, "variance": 0.01, "mse": 0.02} for lv in (2.0, 4.0)]
RUN = ["run", "--task", "gaussian", "--dim", "2", "--estimator", "smile", "--steps", "20", "--hidden", "8",
       "--layers", "0", "--batch-size", "16", "--mi", "1", "--device", "cpu", "--quiet", "--no-plot"]


def one_line(capsys, *needles) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("mibench: error:") and "Traceback" not in err, err
    for n in needles:
        assert n in err, err
    return err


# ------------------------------------------------------------------------------ data checksums


def test_a_checksum_mismatch_is_unusable_input(tmp_path):
    from mibench.data.sources import FileSpec, verify_file

    f = tmp_path / "blob"
    f.write_bytes(b"not the file")
    with pytest.raises(UnreadableInput, match="checksum mismatch") as e:
        verify_file(f, FileSpec("blob", ("0" * 32,)))
    assert e.value.exit_code == EXIT_BAD_INPUT == 4


@pytest.fixture
def edited_mnist(tmp_path, monkeypatch):
    from mibench.data.sources import is_present, resolve_data_dir

    src = resolve_data_dir()
    if src == "embedded" or not is_present("mnist", src):
        pytest.skip("full MNIST not available (set MIBENCH_DATA)")
    root = tmp_path / "data"
    shutil.copytree(src / "mnist", root / "mnist")
    labels = root / "mnist" / "t10k-labels-idx1-ubyte.gz"
    labels.chmod(0o644)
    raw = bytearray(labels.read_bytes())
    raw[-10] ^= 1
    labels.write_bytes(bytes(raw))
    monkeypatch.delenv("MIBENCH_SKIP_MD5", raising=False)
    monkeypatch.setenv("MIBENCH_CACHE", str(tmp_path / "cache"))
    return root


def test_a_checksum_mismatch_exits_4_in_run_and_data(edited_mnist, capsys):
    assert main(["run", "--task", "vision", "--data-dir", str(edited_mnist), "--steps", "5", "--quiet",
                 "--device", "cpu", "--out", str(edited_mnist.parent / "r")]) == 4
    one_line(capsys, "checksum mismatch", "t10k-labels-idx1-ubyte.gz")
    assert main(["data", "--data-dir", str(edited_mnist)]) == 4
    assert "t10k-labels-idx1-ubyte.gz" in capsys.readouterr().err
    assert main(["data", "--data-dir", str(edited_mnist), "--download", "mnist"]) == 4     # present, not fetched
    one_line(capsys, "checksum mismatch")


# ------------------------------------------------------------------------- damaged config.json

def _set(path, value):
    def edit(cfg):
        *parents, last = path
        for key in parents:
            cfg = cfg[key]
        cfg[last] = value
    return edit


DAMAGE = {
    "invalid JSON": ('{"config": {"task": "gaus', "not valid JSON"),
    "not an object": ([1, 2], "no 'config' object"),
    "files a list": (_set(["files"], ["summary.csv"]), "'files' must be an object"),
    "files a string": (_set(["files"], "summary.csv"), "'files' must be an object"),
    "a checksum a number": (_set(["files"], {"summary.csv": 5}), "checksum of 'summary.csv'"),
    "status a number": (_set(["status"], 5), "'status' must be a string"),
    "unknown status": (_set(["status"], "done"), "unknown status 'done'"),
    "schedule a list": (_set(["schedule"], [2]), "'schedule' must be an object"),
    "steps a word": (_set(["config", "steps"], "abc"), "steps must be an integer"),
    "task_params a list": (_set(["config", "task_params"], [1]), "task_params must be a mapping"),
    "task a number": (_set(["config", "task"], 5), "task must be a string"),
}


def _damage(run_dir, how):
    from mibench.records.io import file_digest

    cfg = json.loads((run_dir / "config.json").read_text())
    cfg["files"] = {"summary.csv": file_digest(run_dir / "summary.csv")}     # as a complete run records it
    if callable(how):
        how(cfg)
        text = json.dumps(cfg)
    else:
        text = how if isinstance(how, str) else json.dumps(how)
    (run_dir / "config.json").write_text(text)


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_config_json_is_a_damaged_record_for_every_reader(tmp_path, capsys, damage):
    how, needle = DAMAGE[damage]
    write_fake_run(tmp_path / "runs" / "good", ROWS)
    bad = write_fake_run(tmp_path / "runs" / "bad", ROWS)
    _damage(bad, how)
    base = write_fake_run(tmp_path / "base" / "r", ROWS)
    for args in (["leaderboard", str(tmp_path / "runs"), "-o", str(tmp_path / "lb.csv")],
                 ["leaderboard", str(bad)],
                 ["report", str(tmp_path / "runs"), "-o", str(tmp_path / "site")],
                 ["compare", str(tmp_path / "runs"), str(base.parent)],
                 ["plot", str(bad), "-o", str(tmp_path / "fig.png")]):
        capsys.readouterr()
        assert main(args) == EXIT_BAD_INPUT, (damage, args)
        err = one_line(capsys, needle)
        assert "incomplete" not in err
    assert not (tmp_path / "lb.csv").exists() and not (tmp_path / "site" / "index.html").exists()


@pytest.mark.parametrize("damage", ["invalid JSON", "files a list", "steps a word"])
def test_resume_of_a_damaged_run_is_exit_4_and_overwrite_replaces_it(tmp_path, capsys, damage):
    out = tmp_path / "r"
    assert main([*RUN, "--out", str(out)]) == 0
    _damage(out, DAMAGE[damage][0])
    capsys.readouterr()
    assert main([*RUN, "--out", str(out), "--resume"]) == EXIT_BAD_INPUT
    one_line(capsys, str(out), "--overwrite")
    assert main([*RUN, "--out", str(out)]) == EXIT_BAD_INPUT
    one_line(capsys, "--overwrite")
    assert main([*RUN, "--out", str(out), "--overwrite"]) == 0
    assert json.loads((out / "config.json").read_text())["status"] == "complete"


def test_load_runs_refuses_a_damaged_record(tmp_path):
    import mibench

    write_fake_run(tmp_path / "runs" / "good", ROWS)
    _damage(write_fake_run(tmp_path / "runs" / "bad", ROWS), DAMAGE["files a list"][0])
    with pytest.raises(UnreadableInput, match="'files' must be an object"):
        mibench.load_runs(tmp_path / "runs")


# ---------------------------------------------------------------------- unwritable output


@pytest.fixture
def immutable_dir(tmp_path):
    d = tmp_path / "locked"
    d.mkdir()
    if shutil.which("chattr") and subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode == 0:
        yield d
        subprocess.run(["chattr", "-i", str(d)], check=True)
        return
    d.chmod(0o555)
    try:
        (d / "probe").write_text("")
        (d / "probe").unlink()
        pytest.skip("cannot make an unwritable directory here (root without chattr)")
    except OSError:
        yield d
    finally:
        d.chmod(0o755)


def test_report_into_an_unwritable_directory_is_one_line(tmp_path, immutable_dir, capsys):
    write_fake_run(tmp_path / "runs" / "good", ROWS)
    for out in (immutable_dir, immutable_dir / "site"):
        capsys.readouterr()
        assert main(["report", str(tmp_path / "runs"), "-o", str(out)]) == 2
        one_line(capsys, str(immutable_dir))
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["report", str(tmp_path / "runs"), "-o", str(afile / "site")]) == 2
    one_line(capsys, str(afile))
