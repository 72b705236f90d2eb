"""Every reader of a run's files checks them against the checksums its config.json recorded, and a
complete run missing a file it lists is unusable input (exit 4), whatever reads it: an edited or
duplicated row is never read as a number, and the regression gate is never fed one."""
from __future__ import annotations

import json
import shutil

import pytest
from fake_runs import write_fake_run

from mibench.cli import main
from mibench.errors import UnreadableInput


def one_line(capsys, *needles) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("mibench: error:") and "Traceback" not in err, err
    for n in needles:
        assert n in err, err
    return err


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """A complete sample run (two estimators, two seeds) with the checksums it recorded, and its
    leaderboard (the good side of a comparison)."""
    from mibench.protocols.sample.run import SampleConfig, run_sample

    out = tmp_path_factory.mktemp("sample") / "run"
    run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=["gaussian", "ksg"], mi=1, n=200,
                            seeds=[0, 1], timeout=None), out_dir=out, plot=False)
    assert set(json.loads((out / "config.json").read_text())["files"]) == {"sample_estimates.csv", "summary.csv"}
    assert main(["leaderboard", str(out), "-o", str(out.parent / "good.csv")]) == 0
    return out


@pytest.fixture
def run(sample_run, tmp_path):
    copy = tmp_path / "runs" / "run"
    shutil.copytree(sample_run, copy)
    return copy


def edit_a_number(path):
    lines = path.read_text().splitlines(keepends=True)
    fields = lines[1].split(",")
    fields[8] = "0.999"                                  # the estimate column: a plausible number
    lines[1] = ",".join(fields)
    path.write_text("".join(lines))


def duplicate_a_row(path):
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines + [lines[1]]))


def read_with(reader, run, tmp_path, good) -> int:
    """Read ``run`` with one of mibench's readers; its exit code (``load_runs``: the exit code of the
    error it raises, printed as the CLI prints it)."""
    if reader == "load_runs":
        import sys

        import mibench

        try:
            mibench.load_runs(run)
        except UnreadableInput as exc:
            print(f"mibench: error: {exc}", file=sys.stderr)
            return exc.exit_code
        return 0
    return main({"leaderboard": ["leaderboard", str(run), "-o", str(tmp_path / "lb.csv")],
                 "compare-new": ["compare", str(run), str(good)],
                 "compare-baseline": ["compare", str(good), str(run)],
                 "report": ["report", str(run), "-o", str(tmp_path / "site"), "--no-figures"],
                 "plot": ["plot", str(run), "--out", str(tmp_path / "plots")]}[reader])


READERS = ["leaderboard", "compare-new", "compare-baseline", "report", "plot", "load_runs"]


@pytest.mark.parametrize("edit", [edit_a_number, duplicate_a_row], ids=["edited", "duplicated"])
@pytest.mark.parametrize("reader", READERS)
def test_an_edited_sample_estimates_file_is_refused_by_every_reader(run, sample_run, tmp_path, capsys, reader,
                                                                    edit):
    edit(run / "sample_estimates.csv")
    assert read_with(reader, run, tmp_path, sample_run.parent / "good.csv") == 4
    one_line(capsys, "sample_estimates.csv", "does not match the checksum")
    assert not (tmp_path / "lb.csv").exists() and not (tmp_path / "site").exists()


def test_every_reader_of_a_per_estimate_file_checks_it_stream_too(tmp_path, capsys):
    """The class: not only the sample protocol's readers -- load_runs reads a stream run's
    estimates.csv, and refuses it edited after the run recorded its checksum."""
    from mibench.records import file_digest

    run = write_fake_run(tmp_path / "runs" / "r", [{"estimator": "nwj", "true_mi": 2.0, "bias": -0.5,
                                                     "variance": 0.01, "mse": 0.26}], levels=(2.0,))
    cfg = json.loads((run / "config.json").read_text())
    cfg["files"] = {n: file_digest(run / n) for n in ("estimates.csv", "summary.csv")}
    (run / "config.json").write_text(json.dumps(cfg))
    import mibench

    assert len(mibench.load_runs(run)) == 100
    text = (run / "estimates.csv").read_text().splitlines(keepends=True)
    (run / "estimates.csv").write_text("".join(text[:-1] + [text[-1].replace("1.5", "2.0")]))
    with pytest.raises(UnreadableInput, match="estimates.csv does not match the checksum"):
        mibench.load_runs(run)
    assert main(["plot", str(run), "--out", str(tmp_path / "plots")]) == 4
    one_line(capsys, "estimates.csv", "does not match the checksum")


def test_a_second_estimate_of_the_same_cell_is_refused_without_a_checksum(run, tmp_path, capsys):
    """A run recorded before checksums: a duplicated row is still refused (a run makes each estimate
    once), naming the file and the line."""
    cfg = json.loads((run / "config.json").read_text())
    del cfg["files"]
    (run / "config.json").write_text(json.dumps(cfg))
    duplicate_a_row(run / "sample_estimates.csv")
    assert main(["leaderboard", str(run), "-o", str(tmp_path / "lb.csv")]) == 4
    one_line(capsys, "sample_estimates.csv", "line 6: a second estimate of gaussian at 1 bits, seed 0")


@pytest.mark.parametrize("reader", ["leaderboard", "compare-new", "compare-baseline", "report", "plot"])
def test_a_complete_run_missing_summary_csv_is_unusable_input(run, sample_run, tmp_path, capsys, reader):
    """Not "incomplete" (exit 2): config.json lists summary.csv as part of the complete run (exit 4)."""
    (run / "summary.csv").unlink()
    assert read_with(reader, run, tmp_path, sample_run.parent / "good.csv") == 4
    one_line(capsys, "summary.csv is missing (config.json records it as part of the complete run)")


def test_a_run_is_complete_when_its_config_says_so_whatever_it_misses(tmp_path, capsys):
    """The class: a complete run is classified complete by what config.json says, for every protocol
    and also without recorded checksums, so its missing summary.csv is unusable input (exit 4) and
    ``load_runs(complete_only=True)`` keeps its estimates instead of dropping the run in silence."""
    import mibench
    from mibench.records import find_run_dirs

    run = write_fake_run(tmp_path / "runs" / "r", [{"estimator": "nwj", "true_mi": 2.0, "bias": -0.5,
                                                     "variance": 0.01, "mse": 0.26}], levels=(2.0,))
    (run / "summary.csv").unlink()                      # a stream run recorded before checksums
    assert find_run_dirs([tmp_path / "runs"])[:2] == ([run], [])
    assert len(mibench.load_runs(run, complete_only=True)) == 100
    assert main(["leaderboard", str(tmp_path / "runs"), "-o", str(tmp_path / "lb.csv")]) == 4
    one_line(capsys, "summary.csv", "does not exist")
