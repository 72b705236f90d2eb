"""Running the streaming protocol: its config, the checks before a run, and the run itself
(config.json, estimates.csv per logging block, checkpoints, summary.csv, staircase.png).

A run writes its directory through :mod:`mibench.records`: config.json says ``running`` (with the
writer and a heartbeat) until the run ends as ``complete``, ``interrupted`` or ``failed`` (with the
error); estimates.csv is appended per logging block; at the end of a block, at most every
``checkpoint_every`` seconds, the whole training state goes to ``checkpoint.pt``, from which
``resume`` continues with the same numbers as an uninterrupted run (the checkpoint is removed
when the run completes).
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..checks import check_critic_sizes, check_fields, check_seed
from ..critics import DEFAULT_EMBED, DEFAULT_HIDDEN, DEFAULT_LAYERS
from ..errors import MibenchError, one_line
from ..metrics import summarize
from ..records import EstimatesLog, RunWriter, read_config, write_summary
from ..records.io import atomic_path
from ..records.run_dir import now_iso
from ..schedule import parse_schedule
from ..units import nats_to_bits

#: critic arithmetic.  fp32 is the default and the reference; bf16 (torch.autocast: matmuls and
#: activations in bfloat16, parameters, optimizer and estimator heads in fp32) and tf32 (CUDA matmuls
#: only) are opt-in speed options whose effect on the estimates benchmarks/bench_precision.py reports.
PRECISIONS = ("fp32", "bf16", "tf32")
ENGINES = ("auto", "sequential", "stacked")
CHECKPOINT = "checkpoint.pt"
#: a running run saves its training state at a block end at most this often (seconds)
CHECKPOINT_EVERY_SECONDS = 60.0


@dataclass
class RunConfig:
    task: str = "gaussian"
    task_params: dict = field(default_factory=dict)
    estimators: list = field(default_factory=lambda: ["smile-5"])
    critic: str = "joint"
    hidden: int = DEFAULT_HIDDEN
    layers: int = DEFAULT_LAYERS
    embed: int = DEFAULT_EMBED
    mi: object = "stepwise"
    steps: int = 20_000
    batch_size: int = 64
    lr: float = 5e-4
    seed: int = 0
    device: str = "auto"
    burn_in: int = 0
    log_every: int = 250
    engine: str = "auto"      # how several joint critics are evaluated: auto | sequential | stacked
    precision: str = "fp32"   # critic arithmetic: fp32 | bf16 (autocast, opt-in) | tf32 (CUDA matmuls, opt-in)

    def resolved(self) -> "RunConfig":
        """Canonical names, typed values; a bad value is one line."""
        from ..critics import CRITICS
        from ..estimators import resolve_estimators

        cfg = dataclasses.replace(self, estimators=resolve_estimators(self.estimators),
                                  task_params=dict(self.task_params), critic=CRITICS.get(self.critic).name)
        check_seed(cfg.seed, "--seed")
        check_critic_sizes(cfg.hidden, cfg.layers, cfg.embed)
        if cfg.steps < 1:
            raise MibenchError(f"--steps must be >= 1, got {cfg.steps}")
        if cfg.batch_size < 2:
            raise MibenchError(f"--batch-size must be >= 2 (off-diagonal pairs are the negatives), got {cfg.batch_size}")
        if cfg.lr <= 0 or not math.isfinite(cfg.lr):
            raise MibenchError(f"--lr must be a positive number, got {cfg.lr}")
        if cfg.burn_in < 0:
            raise MibenchError(f"--burn-in must be >= 0, got {cfg.burn_in}")
        if cfg.log_every < 1:
            raise MibenchError(f"log_every must be >= 1, got {cfg.log_every}")
        if cfg.engine not in ENGINES:
            raise MibenchError(f"--engine must be auto, sequential or stacked, got {cfg.engine!r}")
        if cfg.precision not in PRECISIONS:
            raise MibenchError(f"--precision must be one of {', '.join(PRECISIONS)}, got {cfg.precision!r}")
        if cfg.engine == "stacked" and cfg.critic != "joint":
            raise MibenchError("--engine stacked is implemented for the joint critic only")
        return cfg


#: the type of every RunConfig field in a config.json (None: checked by ``resolved`` / the schedule)
FIELD_TYPES = {"task": str, "task_params": dict, "estimators": None, "critic": str, "hidden": int, "layers": int,
               "embed": int, "mi": None, "steps": int, "batch_size": int, "lr": float, "seed": int, "device": str,
               "burn_in": int, "log_every": int, "engine": str, "precision": str}


def config_from_dict(data: dict, where: str = "config") -> RunConfig:
    """A :class:`RunConfig` from config.json's ``config`` (one line for unknown fields or bad types)."""
    data = check_fields({k: v for k, v in data.items() if k != "protocol"}, FIELD_TYPES, where)
    return RunConfig(**data)


@dataclass
class RunResult:
    config: dict
    names: list
    true_mi: np.ndarray          # (steps,) bits
    estimates: np.ndarray        # (n_estimators, steps) bits
    summary: list                # rows, see mibench.records.SUMMARY_COLUMNS
    diverged: dict               # estimator -> first step with a non-finite estimate
    out_dir: Path | None = None


def prepare(cfg: RunConfig):
    """Validate everything a run needs (names, sizes, MI levels against the task's capacity, the
    burn-in against the levels' lengths) and build the task: ``(cfg, device, task, schedule)``.
    Every user mistake is one :class:`MibenchError` line, before anything is written."""
    from ..device import resolve_device
    from ..estimators.registry import require_streamable
    from ..tasks import make_task
    from ..tasks.base import check_mi_request

    cfg = cfg.resolved()
    require_streamable(cfg.estimators)   # black-box / generative estimators: sample protocol only
    schedule = parse_schedule(cfg.mi, cfg.steps)
    shortest = int(np.diff(schedule.boundaries).min())
    if cfg.burn_in >= shortest:
        raise MibenchError(f"--burn-in {cfg.burn_in} is as long as an MI level ({shortest} steps): no step would be "
                           "measured; use a smaller --burn-in or more --steps")
    device = resolve_device(cfg.device)
    if cfg.precision == "tf32" and device.type != "cuda":
        raise MibenchError("--precision tf32 needs a CUDA device (on CPU use fp32, or bf16 as the reduced-precision option)")
    task = make_task(cfg.task, device=device, **cfg.task_params)
    for level in schedule.levels:
        check_mi_request(task.name, level, task.max_mi_bits, _capacity_note(task))
    return cfg, device, task, schedule


def _capacity_note(task) -> str:
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


def _load_checkpoint(out: Path, cfg: RunConfig):
    """The TrainingState of a resumed run (None when it saved none: it restarts from step 0)."""
    import torch

    from .stream_training import TrainingState

    path = out / CHECKPOINT
    if not path.is_file():
        return None, 0.0
    try:
        saved = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # a damaged checkpoint: refuse rather than guess
        raise MibenchError(f"{path} cannot be read ({type(exc).__name__}); pass --overwrite to start the run again") from None
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
    prepared : the tuple :func:`prepare` returns (or a :class:`RunConfig`, prepared here).
    out_dir : the run directory (nothing is written without one): new or empty, or with ``resume``
        the directory of this run (:func:`mibench.records.claim`; anything else is refused).
    progress : a progress bar on stderr.
    plot : write staircase.png.
    run_id : recorded in config.json and every estimates.csv row (default: the directory's name).
    extra : keys added to config.json (e.g. ``rerun_of``).
    resume : continue the run in ``out_dir`` from its checkpoint (from step 0 when it saved none).
    checkpoint_every : seconds between checkpoints (``None``: no checkpoints).
    """
    import torch

    from .runtime import environment, peak_memory, sigterm_requests_stop
    from .stream_training import STOP, build_models, check_stop, choose_engine, train

    from ..records import claim

    if isinstance(prepared, RunConfig):
        prepared = prepare(prepared)
    cfg, device, task, schedule = prepared
    if out_dir is not None:
        mode = claim(out_dir, dataclasses.asdict(cfg), resume=resume).mode
        if mode == "complete":
            raise MibenchError(f"{out_dir} holds this run, complete: nothing to resume")
        resume = mode == "resume"
    true_mi = schedule.true_mi()
    critics, heads, groups = build_models(cfg, task.dim_x, task.dim_y, device)
    ceilings = {n: nats_to_bits(h.ceiling_nats(cfg.batch_size)) for n, h in zip(cfg.estimators, heads)}
    out = Path(out_dir) if out_dir is not None else None
    run_id = run_id or (out.resolve().name if out is not None else None)
    config = {
        "protocol": "stream",
        "status": "running",
        "run_id": run_id,
        "config": dataclasses.asdict(cfg),
        "schedule": {"levels_bits": list(schedule.levels), "description": schedule.describe(),
                     "boundaries": schedule.boundaries.tolist()},
        "task_info": (task_info := task.info()),
        "environment": environment(device),
        "engine": choose_engine(cfg, device),
        "critics_trained": len(groups),
        "shared_critics": {key: [cfg.estimators[e] for e in g] for key, g in groups.items() if len(g) > 1},
        "ceilings_bits": {n: c for n, c in ceilings.items() if math.isfinite(c)},
        "notes": _ceiling_notes(ceilings, schedule.levels) + list(task_info.get("notes", [])),
        "metrics_window": f"per true-MI level: all steps of the level after the first {cfg.burn_in} (burn-in); bits",
        "started": now_iso(),
        **(extra or {}),
    }
    state, seconds_before = (None, 0.0)
    if resume and out is not None:
        old = read_config(out)
        config["started"] = old.get("started", config["started"])
        config["resumed"] = list(old.get("resumed") or []) + [now_iso()]
        state, seconds_before = _load_checkpoint(out, cfg)
    writer = log = None
    t0 = time.perf_counter()

    def on_block(levels, host, start, stop):
        log.append(levels, host, start, stop)
        writer.beat()

    def on_checkpoint(st):
        with atomic_path(out / CHECKPOINT) as tmp:
            torch.save({"config": dataclasses.asdict(cfg), "state": st.to_dict(),
                        "seconds": seconds_before + time.perf_counter() - t0}, tmp)

    with sigterm_requests_stop(STOP):
        if out is not None:
            writer = RunWriter(out, config).start()
            log = EstimatesLog(out / "estimates.csv", cfg.estimators, cfg.critic, run_id, cfg.seed)
            log.open(resume_from=state.step if state is not None else None)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        status, error = "failed", None
        try:
            estimates, diverged = train(cfg, task, schedule, critics, heads, groups, device, progress,
                                        on_block=on_block if out is not None else None, state=state,
                                        on_checkpoint=on_checkpoint if out is not None and checkpoint_every is not None
                                        else None, checkpoint_every=checkpoint_every)
            check_stop()
            status = "complete"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        except Exception as exc:
            error = one_line(exc)
            raise
        finally:
            if log is not None:
                log.close()
            if status != "complete" and writer is not None:
                writer.finish(status, error=error)
    elapsed = time.perf_counter() - t0
    summary = summarize(task.name, cfg.critic, cfg.estimators, true_mi, estimates, cfg.burn_in)
    done_here = cfg.steps - (state.step if state is not None else 0)
    config.update(diverged=diverged, wall_seconds=round(seconds_before + elapsed, 3),
                  steps_per_second=round(done_here / elapsed, 2) if elapsed > 0 else None,
                  peak_memory=peak_memory(device), finished=now_iso())
    result = RunResult(config, list(cfg.estimators), true_mi, estimates, summary, diverged, out)
    if out is not None:
        log.finish(true_mi, estimates)       # the final order, atomically (same rows as the blocks)
        write_summary(out / "summary.csv", summary)
        if plot:
            from ..plots import plot_staircase

            title = f"{task.name} · {cfg.critic} critic · batch {cfg.batch_size} · seed {cfg.seed}"
            plot_staircase(out / "staircase.png", cfg.estimators, true_mi, estimates, title, ceilings, diverged=diverged)
        (out / CHECKPOINT).unlink(missing_ok=True)
        writer.finish("complete", files=("estimates.csv", "summary.csv"))   # last: marks the directory complete
    return result
