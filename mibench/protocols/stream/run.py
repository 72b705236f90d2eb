"""Running the streaming protocol: the checks before a run, and the run itself (config.json,
estimates.csv per logging block, checkpoints, summary.csv, staircase.png).

A run lives in its directory through :class:`~mibench.protocols.runtime.RunLifecycle`: config.json
says ``running`` (with the writer and a heartbeat) until the run ends as ``complete``,
``interrupted`` or ``failed`` (with the error); estimates.csv is appended per logging block; at the
end of a block, at most every ``checkpoint_every`` seconds, the whole training state goes to
``checkpoint.pt``, from which ``resume`` continues with the same numbers as an uninterrupted run
(the checkpoint is removed when the run completes).  A resumed run never shortens what estimates.csv
recorded: rows logged after the last checkpoint are kept, and the steps they cover are re-computed
(the same numbers) without being written twice.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mibench.errors import MibenchError
from mibench.metrics import summarize
from mibench.protocols.base import PreparedRun
from mibench.protocols.schedule import MISchedule, check_burn_in, parse_schedule
from mibench.protocols.stream.config import StreamConfig, check_memory
from mibench.records import EstimatesLog, RunHeader, write_summary
from mibench.records.io import atomic_path

CHECKPOINT = "checkpoint.pt"
#: a running run saves its training state at a block end at most this often (seconds)
CHECKPOINT_EVERY_SECONDS = 60.0
#: the config's old name (until mibench 0.3.0)
RunConfig = StreamConfig


@dataclass
class RunResult:
    config: dict
    names: list
    true_mi: np.ndarray          # (steps,) bits
    estimates: np.ndarray        # (n_estimators, steps) bits
    summary: list                # rows, see mibench.records.SUMMARY_COLUMNS
    diverged: dict               # estimator -> first step with a non-finite estimate
    out_dir: Path | None = None


@dataclass
class PreparedStream(PreparedRun):
    """A streaming run checked and ready: config, device, task and its true-MI schedule."""

    schedule: MISchedule | None = None


def prepare(cfg: StreamConfig) -> PreparedStream:
    """Validate everything a run needs (names, sizes, MI levels against the task's capacity, the
    burn-in against the levels' lengths) and build the task.  Every user mistake is one
    :class:`MibenchError` line, before anything is written."""
    from mibench.estimators.registry import require_streamable
    from mibench.tasks import make_task
    from mibench.tasks.base import check_mi_request
    from mibench.utils.device import resolve_device

    cfg = cfg.resolved()
    require_streamable(cfg.estimators)   # black-box / generative estimators: sample protocol only
    schedule = parse_schedule(cfg.mi, cfg.steps)
    check_burn_in(cfg.burn_in, schedule)
    device = resolve_device(cfg.device)
    if cfg.precision == "tf32" and device.type != "cuda":
        raise MibenchError("--precision tf32 needs a CUDA device (on CPU use fp32, or bf16 as the reduced-precision "
                           "option)")
    task = make_task(cfg.task, device=device, **cfg.task_params)
    # the levels the data is drawn at: a request within the printed precision of the task's maximum is
    # drawn at the maximum, and the schedule that scores the estimates says so
    drawn = tuple(check_mi_request(task.name, level, task.max_mi_bits, _capacity_note(task))
                  for level in schedule.levels)
    if drawn != schedule.levels:
        schedule = MISchedule(drawn, schedule.steps)
        cfg = dataclasses.replace(cfg, mi=list(drawn) if len(drawn) > 1 else drawn[0])
    check_memory(cfg, task, device)
    return PreparedStream(cfg, device, task, schedule)


def _capacity_note(task) -> str:
    if getattr(task, "reach_note", ""):      # a task that says why its MI is bounded
        return task.reach_note
    info = task.info()
    return f"ds = {info['ds']} binary sources" if "ds" in info and math.isfinite(task.max_mi_bits) else ""


def _ceiling_notes(ceilings: dict, levels) -> list[str]:
    notes = []
    for name, c in ceilings.items():
        above = [v for v in levels if v > c + 1e-9]
        if above:
            notes.append(f"{name} cannot exceed log2(batch) = {c:.2f} bits, so it cannot track the true MI at "
                         + ", ".join(f"{v:g}" for v in above) + " bits")
    return notes


def _load_checkpoint(out: Path, cfg: StreamConfig):
    """The TrainingState of a resumed run (None when it saved none: it restarts from step 0)."""
    import torch

    from mibench.protocols.stream.training import TrainingState

    path = out / CHECKPOINT
    if not path.is_file():
        return None, 0.0
    try:
        saved = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # a damaged checkpoint: refuse rather than guess
        raise MibenchError(f"{path} cannot be read ({type(exc).__name__}); pass --overwrite to start the run "
                           "again") from None
    if saved.get("config") != dataclasses.asdict(cfg):
        raise MibenchError(f"{path} belongs to another config; pass --overwrite to start the run again")
    return TrainingState.from_dict(saved["state"]), float(saved.get("seconds", 0.0))


def run(prepared, out_dir=None, *, progress: bool = False, plot: bool = True, run_id: str | None = None,
        extra: dict | None = None, resume: bool = False,
        checkpoint_every: float | None = CHECKPOINT_EVERY_SECONDS) -> RunResult:
    """Train the estimators of a prepared run (:func:`prepare`) and, with ``out_dir``, write its run
    directory (module docstring).

    Parameters
    ----------
    prepared : what :func:`prepare` returns (or a :class:`StreamConfig`, prepared here).
    out_dir : the run directory (nothing is written without one): new or empty, or with ``resume``
        the directory of this run (:func:`mibench.records.claim`; anything else is refused); or the
        :class:`~mibench.records.Claim` the caller made of it.
    progress : a progress bar on stderr.
    plot : write staircase.png.
    run_id : recorded in config.json and every estimates.csv row (default: the directory's name).
    extra : keys added to config.json (e.g. ``rerun_of``).
    resume : continue the run in ``out_dir`` from its checkpoint (from step 0 when it saved none,
        keeping what estimates.csv logged).
    checkpoint_every : seconds between checkpoints (``None``: no checkpoints).
    """
    from mibench.protocols.runtime import RunLifecycle, check_stop, peak_memory
    from mibench.protocols.stream.training import TrainingRun, build_models, train

    if isinstance(prepared, StreamConfig):
        prepared = prepare(prepared)
    cfg, device, task = prepared.config, prepared.device, prepared.task
    life = RunLifecycle(out_dir, prepared.config_dict(), resume=resume)
    run_id = life.run_id(run_id)
    from mibench.tasks.shapes import image_shapes

    models = build_models(cfg, task.dim_x, task.dim_y, device, shapes=image_shapes(task))
    training = TrainingRun(cfg, task, prepared.schedule, *models, device)
    with life.running(_header(prepared, training, run_id, extra)) as config:
        state, seconds_before = _load_checkpoint(life.out, cfg) if life.resume else (None, 0.0)
        with _Recorder(life, cfg, run_id, state, seconds_before, checkpoint_every) as record:
            if life.resume and state is None and record.logged_steps:
                config.setdefault("notes", []).append(_restart_note(record.logged_steps))
                if progress:
                    print(f"mibench: {config['notes'][-1]}", file=sys.stderr)
            estimates, diverged = train(training, record.hooks(progress), state=state)
            check_stop()
            elapsed = time.perf_counter() - record.t0
            true_mi = prepared.schedule.true_mi()
            summary = summarize(task.name, cfg.critic, cfg.estimators, true_mi, estimates, cfg.burn_in)
            done_here = cfg.steps - (state.step if state is not None else 0)
            config.update(diverged=diverged, wall_seconds=round(seconds_before + elapsed, 3),
                          steps_per_second=round(done_here / elapsed, 2) if elapsed > 0 else None,
                          peak_memory=peak_memory(device), finished=_now())
            result = RunResult(config, list(cfg.estimators), true_mi, estimates, summary, diverged, life.out)
            if life.out is not None:
                record.finish(result, training.ceilings, plot, task.name)
        life.complete(files=("estimates.csv", "summary.csv"))     # last: marks the directory complete
    if life.out is not None:
        (life.out / CHECKPOINT).unlink(missing_ok=True)
    return result


def _now() -> str:
    from mibench.records.run_dir import now_iso

    return now_iso()


def _restart_note(logged: int) -> str:
    return (f"resumed without a checkpoint (interrupted before its first one): training restarted at step 0; "
            f"the {logged} steps estimates.csv had logged were kept and re-computed, not written twice")


def _header(prepared: PreparedStream, training, run_id, extra) -> RunHeader:
    """config.json's header of a streaming run."""
    from mibench.protocols.runtime import environment
    from mibench.protocols.stream.training import choose_engine

    cfg, schedule, task_info = prepared.config, prepared.schedule, prepared.task.info()
    ceilings, groups = training.ceilings, training.groups
    details = {"engine": choose_engine(cfg, prepared.device), "critics_trained": len(groups),
               "shared_critics": {key: [cfg.estimators[e] for e in g] for key, g in groups.items() if len(g) > 1},
               "ceilings_bits": {n: c for n, c in ceilings.items() if math.isfinite(c)},
               "notes": _ceiling_notes(ceilings, schedule.levels) + list(task_info.get("notes", [])),
               "metrics_window": f"per true-MI level: all steps of the level after the first {cfg.burn_in} "
                                 "(burn-in); bits"}
    return RunHeader("stream", run_id, prepared.config_dict(),
                     {"levels_bits": list(schedule.levels), "description": schedule.describe(),
                      "boundaries": schedule.boundaries.tolist()},
                     task_info, environment(prepared.device), details, dict(extra or {}))


class _Recorder:
    """What a streaming run writes while it trains: estimates.csv block by block (never rows it
    already holds) and, at most every ``checkpoint_every`` seconds, the training state."""

    def __init__(self, life, cfg: StreamConfig, run_id, state, seconds_before: float, checkpoint_every):
        self.life, self.cfg, self.state = life, cfg, state
        self.seconds_before, self.checkpoint_every = seconds_before, checkpoint_every
        self.log = None
        self.logged_steps = 0
        if life.out is not None:
            self.log = EstimatesLog(life.out / "estimates.csv", cfg.estimators, cfg.critic, run_id, cfg.seed)
            self.log.open(resume_from=state.step if state is not None else 0, keep=life.resume)
            self.logged_steps = self.log.logged
        self.t0 = time.perf_counter()

    def hooks(self, progress: bool):
        from mibench.protocols.stream.training import TrainingHooks

        if self.log is None:
            return TrainingHooks(progress=progress)
        return TrainingHooks(progress=progress, on_block=self.on_block,
                             on_checkpoint=self.on_checkpoint if self.checkpoint_every is not None else None,
                             checkpoint_every=self.checkpoint_every)

    def on_block(self, levels, host, start, stop) -> None:
        self.log.append(levels, host, start, stop)
        self.life.beat()

    def on_checkpoint(self, st) -> None:
        import torch

        with atomic_path(self.life.out / CHECKPOINT) as tmp:
            torch.save({"config": dataclasses.asdict(self.cfg), "state": st.to_dict(),
                        "seconds": self.seconds_before + time.perf_counter() - self.t0}, tmp)

    def __enter__(self) -> "_Recorder":
        return self

    def __exit__(self, *exc) -> None:
        if self.log is not None:
            self.log.close()

    def finish(self, result: RunResult, ceilings: dict, plot: bool, task_name: str) -> None:
        """estimates.csv in its final order (atomically; the same rows as the blocks), summary.csv,
        staircase.png."""
        out, cfg = self.life.out, self.cfg
        self.log.finish(result.true_mi, result.estimates)
        write_summary(out / "summary.csv", result.summary)
        if plot:
            from mibench.plots import plot_staircase

            title = f"{task_name} · {cfg.critic} critic · batch {cfg.batch_size} · seed {cfg.seed}"
            plot_staircase(out / "staircase.png", cfg.estimators, result.true_mi, result.estimates, title, ceilings,
                           diverged=result.diverged)
