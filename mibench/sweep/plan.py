"""What a sweep invocation does with each cell: run it, resume it, or skip it as complete."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from mibench.errors import MibenchError
from mibench.sweep.spec import Cell, SweepSpec


@dataclass
class Plan:
    cells: list            # every cell of the sweep
    todo: list             # cells to run (new, or redone after a failure)
    resume: list           # cells to continue (interrupted or killed with the same config)
    done: list             # complete cells
    damaged: dict = field(default_factory=dict)   # cell name -> why: complete, but a recorded file changed since

    @property
    def to_run(self) -> list:
        """The cells this invocation runs, in the sweep's order: a resumed cell where it stands (run after
        every new cell, an interrupted cell of a slice came last in the next one, after cells the sweep
        had ordered behind it)."""
        order = {c.name: i for i, c in enumerate(self.cells)}
        return sorted(self.todo + self.resume, key=lambda c: order[c.name])


def plan(spec: SweepSpec, out_dir, cells: list | None = None) -> Plan:
    """Classify the sweep's cells (``cells``, where the caller built them already) against ``out_dir``:
    complete cells (their recorded config must be the cell's, else one line: an edited spec would
    otherwise mix results), cells to resume (a run that was interrupted or killed: same config, status
    interrupted / stale), and cells to run (not started, or failed: redone from the start)."""
    from mibench.errors import UnreadableInput
    from mibench.records import config_diff, is_complete, read_config, run_status
    from mibench.records.run_dir import verify_present_files

    out_dir = Path(out_dir)
    cells = spec.cells() if cells is None else cells
    todo, resume, done, damaged = [], [], [], {}
    for c in cells:
        d = out_dir / c.name
        if not (d / "config.json").is_file():
            todo.append(c)
            continue
        try:
            recorded = read_config(d)
        except UnreadableInput:
            todo.append(c)              # a cell killed while writing its first config.json
            continue
        same = same_cell(recorded["config"], c.config)
        if is_complete(d):
            if not same:
                diff = ", ".join(config_diff(recorded["config"], c.config))
                raise MibenchError(f"cell {c.name} in {out_dir} finished with a different config ({diff} changed); "
                                   "use a new --out directory or --overwrite")
            stale = _text_encoder_changed(recorded, c.config)
            if stale:
                raise MibenchError(f"cell {c.name} in {out_dir} {stale}, or use a new --out directory or --overwrite")
            try:
                verify_present_files(d, recorded)
            except UnreadableInput as exc:      # a file edited or cut short since: redone, not counted as done
                damaged[c.name] = str(exc)
                todo.append(c)
                continue
            done.append(c)
        elif same and run_status(recorded) in ("interrupted", "stale"):
            resume.append(c)
        else:
            todo.append(c)
    return Plan(cells, todo, resume, done, damaged)


def same_cell(recorded: dict, config: dict) -> bool:
    """Whether a cell's run recorded the cell's ``config``: the same fingerprint, or the same but for MI
    levels each within the printed precision of the one recorded -- a run records a level it drew at the
    task's bound as drawn (:func:`mibench.tasks.base.check_mi_request`: 3.322 bits requested, log2 10
    drawn and recorded), while the spec keeps the request."""
    from mibench.protocols.schedule import parse_schedule
    from mibench.records import config_diff, fingerprint
    from mibench.tasks.base import printed_tolerance

    if fingerprint(recorded) == fingerprint(config):
        return True
    if config_diff(recorded, config) != ["mi"]:
        return False
    try:
        drawn, asked = (parse_schedule(c["mi"], 10**9).levels for c in (recorded, config))
    except MibenchError:
        return False
    return len(drawn) == len(asked) and all(abs(d - a) <= printed_tolerance(d) for d, a in zip(drawn, asked))


def _text_encoder_changed(recorded: dict, config: dict) -> str:
    """Why a complete cell no longer is the cell its spec describes though its config is the same:
    the spec leaves the text encoder to the default, and the default changed since the cell ran
    (off-the-shelf MiniLM, then the fine-tuned ``minilm-imdb``), so skipping it as complete would
    mix embeddings.  Empty when nothing changed (or the spec names its encoder: then the config,
    compared above, says which)."""
    from mibench.data.embeddings import DEFAULT_ENCODER, is_default_encoder
    from mibench.protocols.setup import text_encoder_used

    used = text_encoder_used(recorded.get("task_info"))
    if used is None or "encoder" in (config.get("task_params") or {}) or is_default_encoder(used):
        return ""
    return (f"was made with text encoder {used!r} while the spec leaves it to the default, now "
            f"{DEFAULT_ENCODER!r}: pin encoder = \"{used}\" in the spec to keep it")


def cell_status(cell_dir) -> str | None:
    """A cell's status as its run directory records it: ``complete`` (config.json says so and
    summary.csv is there), ``failed``, ``running`` (its writer is alive), or ``interrupted`` (Ctrl-C,
    SIGTERM, or a writer that is gone: what ``--resume`` continues); None when the cell never wrote a
    readable config.json (not started)."""
    from mibench.errors import UnreadableInput
    from mibench.records import is_complete, read_config, run_status

    cell_dir = Path(cell_dir)
    if not (cell_dir / "config.json").is_file():
        return None
    try:
        status = run_status(read_config(cell_dir))
    except UnreadableInput:
        return None
    if status == "complete":
        return "complete" if is_complete(cell_dir) else "interrupted"
    return "interrupted" if status == "stale" else status


def cell_counts(sweep_dir, manifest: dict) -> dict:
    """``counts`` of a sweep manifest recomputed from its cells' run directories
    (:func:`cell_status`): what a reader should show, also for a manifest written before its driver
    took the cells' own statuses.  A cell without a run directory (never started, or its files kept
    elsewhere, e.g. a committed result's ``runs/``) keeps the manifest's ``complete`` or ``failed``
    and is ``pending`` otherwise."""
    counts: dict[str, int] = {}
    for c in manifest.get("cells") or []:
        if not isinstance(c, dict):
            continue
        recorded = c.get("status") if c.get("status") in ("complete", "failed") else "pending"
        status = cell_status(Path(sweep_dir) / str(c.get("dir") or c.get("name"))) or recorded
        counts[status] = counts.get(status, 0) + 1
    counts["diverged"] = (manifest.get("counts") or {}).get("diverged", 0)
    return counts


def sweep_status(sweep_dir, manifest: dict) -> str | None:
    """The sweep's status as a reader should show it: the manifest's, except that a manifest still
    ``running`` whose driver no longer holds the lock (:func:`mibench.sweep.lock.driver_alive`) was
    left by a driver killed outright and is ``interrupted``, which ``--resume`` continues."""
    from mibench.sweep.lock import driver_alive

    status = manifest.get("status")
    if status == "running" and not driver_alive(Path(sweep_dir)):
        return "interrupted"
    return status


def clear_cell(cell_dir: Path) -> None:
    """Remove a cell's directory before it is run again from the start."""
    if cell_dir.exists():
        shutil.rmtree(cell_dir)


__all__ = ["Cell", "Plan", "plan", "cell_counts", "cell_status", "clear_cell", "sweep_status"]
