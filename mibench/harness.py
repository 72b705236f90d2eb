"""Training harness: train the estimators' critics on a shared stream of batches and record every
estimator's estimate at every step.

* Paired comparisons: all estimators see the **same batch** at every step, so sampling is paid
  once and differences between estimators are not sampling noise.
* Reproducible: the batch stream depends only on ``seed``; each critic's initialisation depends on
  (seed, training objective, critic), so an estimator's curve is the same whether it trains alone
  or with others (same device).
* One critic per training objective: estimators that differ only in how the estimate is read off
  the trained critic (JS and SMILE-tau all train with the JS f-GAN objective) share one critic;
  8 paper estimators train 5 critics.
* No per-step host syncs: estimates go into a device buffer and are read back in blocks, where
  divergence (a non-finite estimate) is detected; a diverged estimator stops training, its step is
  recorded and the run carries on.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import platform
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from . import __version__
from .kernels import kernel_name, make_adam
from .critics import DEFAULT_EMBED, DEFAULT_HIDDEN, DEFAULT_LAYERS, make_critic
from .device import resolve_device
from .errors import MibenchError, Terminated
from .seeding import derived_seed
from .estimators import make_estimator, resolve_estimators, training_groups
from .metrics import SUMMARY_COLUMNS, summarize
from .schedule import parse_schedule
from .tasks import make_task
from .tasks.base import check_mi_request
from .units import nats_to_bits


#: critic arithmetic.  fp32 is the default and the reference; bf16 (torch.autocast: matmuls and
#: activations in bfloat16, parameters, optimizer and estimator heads in fp32) and tf32 (CUDA matmuls
#: only) are opt-in speed options whose effect on the estimates benchmarks/bench_precision.py reports.
PRECISIONS = ("fp32", "bf16", "tf32")


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
        cfg = dataclasses.replace(self, estimators=resolve_estimators(self.estimators), task_params=dict(self.task_params))
        if cfg.batch_size < 2:
            raise MibenchError(f"--batch-size must be >= 2 (off-diagonal pairs are the negatives), got {cfg.batch_size}")
        if cfg.lr <= 0 or not math.isfinite(cfg.lr):
            raise MibenchError(f"--lr must be a positive number, got {cfg.lr}")
        if cfg.burn_in < 0:
            raise MibenchError(f"--burn-in must be >= 0, got {cfg.burn_in}")
        if cfg.engine not in ("auto", "sequential", "stacked"):
            raise MibenchError(f"--engine must be auto, sequential or stacked, got {cfg.engine!r}")
        if cfg.precision not in PRECISIONS:
            raise MibenchError(f"--precision must be one of {', '.join(PRECISIONS)}, got {cfg.precision!r}")
        if cfg.engine == "stacked" and cfg.critic.lower() not in ("joint", "concat"):
            raise MibenchError("--engine stacked is implemented for the joint critic only")
        return cfg


@dataclass
class RunResult:
    config: dict
    names: list
    true_mi: np.ndarray          # (steps,) bits
    estimates: np.ndarray        # (n_estimators, steps) bits
    summary: list                # rows, see metrics.SUMMARY_COLUMNS
    diverged: dict               # estimator -> first step with a non-finite estimate
    out_dir: Path | None = None


def build_models(cfg: RunConfig, dim_x: int, dim_y: int, device):
    """Critics, estimator heads and the groups that share a critic.

    One critic per training group (:func:`mibench.estimators.training_groups`: estimators whose
    training is the same objective on the same scores, e.g. JS and SMILE-tau, share one), each
    initialised from a seed derived from (seed, training objective, critic), so an estimator's
    curve is the same whether it trains alone or with others.  One head per estimator.
    Returns ``(critics, heads, groups)`` with ``groups`` the estimator indices of each critic,
    keyed by training objective in the critics' order.
    """
    heads = [make_estimator(name).to(device) for name in cfg.estimators]
    groups = training_groups(cfg.estimators)
    critics = []
    for key in groups:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derived_seed(cfg.seed, key, cfg.critic, cfg.hidden, cfg.layers, cfg.embed))
            critic = make_critic(cfg.critic, dim_x, dim_y, cfg.hidden, cfg.layers, cfg.embed)
        critics.append(critic.to(device))
    return critics, heads, groups


def choose_engine(cfg: RunConfig, device: torch.device) -> str:
    """``sequential``: one critic after another (on CPU each GEMM goes through oneDNN);
    ``stacked``: all joint critics in one batched pass (:mod:`mibench.critics.stacked`).
    ``auto`` picks what ``benchmarks/bench_training.py`` measured faster for the device."""
    if cfg.engine != "auto":
        return cfg.engine
    if len(training_groups(cfg.estimators)) < 2 or cfg.critic.lower() not in ("joint", "concat"):
        return "sequential"
    return STACKED_DEFAULT[device.type]


#: engine used by ``auto`` per device type (see benchmarks/bench_training.py for the measurements)
STACKED_DEFAULT = {"cpu": "sequential", "cuda": "stacked", "mps": "stacked"}


def environment(device: torch.device) -> dict:
    env = {"mibench": __version__, "torch": torch.__version__, "numpy": np.__version__,
           "python": sys.version.split()[0], "platform": platform.platform(), "device": str(device),
           "torch_threads": torch.get_num_threads(), "kernels": kernel_name(device)}
    if device.type == "cpu":
        from . import kernels

        env["allocator"] = kernels.allocator_setting()
        if env["kernels"] == "onednn":
            env["grad_weight_matmul"] = ("oneDNN matmul, transposed operands in place (probed fp32)"
                                         if kernels._strided_mm_is_fp32() else "oneDNN linear, transposed copy")
    if device.type == "cuda":
        env["device_name"] = torch.cuda.get_device_name(device)
    else:
        env["device_name"] = platform.processor() or platform.machine()
    return env


def prepare(cfg: RunConfig):
    """Validate everything a run needs (names, sizes, MI levels vs. the task's capacity) and build
    the task; raises :class:`MibenchError` with one line on any user mistake."""
    cfg = cfg.resolved()
    from .estimators.protocols import require_streamable

    require_streamable(cfg.estimators)   # black-box / generative estimators: sample protocol only (issue 12)
    device = resolve_device(cfg.device)
    schedule = parse_schedule(cfg.mi, cfg.steps)
    if cfg.precision == "tf32" and device.type != "cuda":
        raise MibenchError("--precision tf32 needs a CUDA device (on CPU use fp32, or bf16 as the reduced-precision option)")
    from .critics import CRITICS

    CRITICS.get(cfg.critic)
    task = make_task(cfg.task, device=device, **cfg.task_params)
    for level in schedule.levels:
        check_mi_request(task.name, level, task.max_mi_bits, _capacity_note(task))
    return cfg, device, task, schedule


def run(cfg: RunConfig, out_dir=None, progress: bool = False, plot: bool = True, prepared=None,
        run_id: str | None = None, extra: dict | None = None) -> RunResult:
    """Train and evaluate; if ``out_dir`` is given, write the run directory (see :mod:`mibench.results`).

    ``run_id`` (default: the run directory's name) is recorded in config.json and in every row of
    estimates.csv, which is appended to at every logging block (``log_every`` steps) so an
    interrupted run keeps what it logged; ``extra`` adds keys to config.json (e.g. ``rerun_of``)."""
    from . import results

    cfg, device, task, schedule = prepared or prepare(cfg)
    # (the CPU allocator is tuned by mibench's own processes only: the CLI and sweep workers, see
    # mibench.allocator; a library call leaves the caller's malloc alone)
    true_mi = schedule.true_mi()
    critics, heads, groups = build_models(cfg, task.dim_x, task.dim_y, device)
    ceilings = {n: nats_to_bits(h.ceiling_nats(cfg.batch_size)) for n, h in zip(cfg.estimators, heads)}

    out = Path(out_dir) if out_dir is not None else None
    run_id = run_id or (out.resolve().name if out is not None else None)
    config = {
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
        "notes": _ceiling_notes(ceilings, schedule.levels) + list(task_info.get("notes", [])),  # + task decodability
        "metrics_window": f"per true-MI level: all steps of the level after the first {cfg.burn_in} (burn-in); bits",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **(extra or {}),
    }
    log = None
    with _sigterm_stops_training():
        if out is not None:
            results.write_json(out / "config.json", config)
            log = results.EstimatesLog(out / "estimates.csv", cfg.estimators, cfg.critic, run_id, cfg.seed).open()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        t0 = time.perf_counter()
        status = "failed"
        try:
            estimates, diverged = _train(cfg, task, schedule, critics, heads, groups, device, progress,
                                         on_block=log.append if log is not None else None)
            _check_stop()
            status = "complete"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            if log is not None:
                log.close()
            if status != "complete" and out is not None:
                config["status"] = status
                results.write_json(out / "config.json", config)
    elapsed = time.perf_counter() - t0

    summary = summarize(task.name, cfg.critic, cfg.estimators, true_mi, estimates, cfg.burn_in)
    config.update(status="complete", diverged=diverged, wall_seconds=round(elapsed, 3),
                  steps_per_second=round(cfg.steps / elapsed, 2) if elapsed > 0 else None,
                  peak_memory=peak_memory(device),
                  finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    result = RunResult(config, list(cfg.estimators), true_mi, estimates, summary, diverged, out)
    if out is not None:
        log.finish(true_mi, estimates)       # the final order, atomically (same rows as the blocks)
        results.write_rows(out / "summary.csv", summary, SUMMARY_COLUMNS)
        if plot:
            from .plots import plot_staircase

            title = f"{task.name} · {cfg.critic} critic · batch {cfg.batch_size} · seed {cfg.seed}"
            plot_staircase(out / "staircase.png", cfg.estimators, true_mi, estimates, title, ceilings, diverged=diverged)
        results.write_json(out / "config.json", config)   # last: marks the directory complete
    return result


_STOP = {"requested": False}


def _check_stop() -> None:
    if _STOP["requested"]:
        _STOP["requested"] = False
        raise Terminated("SIGTERM")


@contextlib.contextmanager
def _sigterm_stops_training():
    """While a run trains, SIGTERM only sets a flag that the training loop checks at every step
    (an exception raised from a known place, never asynchronously mid-write); the run is then
    recorded as interrupted.  Installed only in the main thread and only over the default
    handler (a sweep's or the user's own handler is left alone).  A SIGTERM that lands after the
    last check is delivered again, with the default action, once the handler is removed."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    _STOP["requested"] = False
    signal.signal(signal.SIGTERM, lambda signum, frame: _STOP.__setitem__("requested", True))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if _STOP["requested"]:
            _STOP["requested"] = False
            os.kill(os.getpid(), signal.SIGTERM)


def peak_memory(device: torch.device) -> dict:
    """Peak resident memory of this process so far (MiB) and, on CUDA, the run's peak allocation."""
    out = {}
    try:
        import resource

        out["process_max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    except ImportError:  # pragma: no cover (Windows)
        pass
    if device.type == "cuda":
        out["cuda_max_allocated_mb"] = round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
    return out


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


def _train(cfg, task, schedule, critics, heads, groups, device, progress, on_block=None):
    stacked = None
    if choose_engine(cfg, device) == "stacked":
        from .critics.stacked import StackedJointCritics

        stacked = StackedJointCritics(critics).to(device)
        critics = [stacked]
    params = [p for m in (*critics, *heads) for p in m.parameters()]
    with _precision(cfg.precision, device) as scores_of:
        return _loop(cfg, task, schedule, critics, heads, groups, device, progress, params, stacked, scores_of,
                     on_block)


@contextlib.contextmanager
def _precision(precision: str, device: torch.device):
    """Yield ``scores_of(critic, x, y)``: the critic's (K, K) scores, computed in ``precision`` and
    handed to the estimator heads in fp32."""
    if precision == "fp32":
        yield lambda critic, x, y: critic(x, y)
    elif precision == "bf16":
        def scores_of(critic, x, y):
            with torch.autocast(device.type, dtype=torch.bfloat16):
                out = critic(x, y)
            return out.float()

        yield scores_of
    else:   # tf32: CUDA matmuls with TensorFloat-32 inputs, restored afterwards
        old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        try:
            yield lambda critic, x, y: critic(x, y)
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def _step_group(heads, members, scores, buffer, step):
    """One training group's step: the first live member's head gives the training loss (all
    members train by the same objective) and its estimate; the others read theirs off the same
    scores without building a graph.  Returns the loss."""
    loss, buffer[members[0], step] = heads[members[0]](scores)
    with torch.no_grad():
        for e in members[1:]:
            buffer[e, step] = heads[e].value(scores)
    return loss


def _loop(cfg, task, schedule, critics, heads, groups, device, progress, params, stacked, scores_of, on_block=None):
    n_est, steps = len(heads), cfg.steps
    optimizer = make_adam(params, cfg.lr) if params else None
    generator = torch.Generator(device=device).manual_seed(cfg.seed)
    levels = schedule.true_mi()
    buffer = torch.full((n_est, steps), float("nan"), device=device)
    host = np.full((n_est, steps), np.nan)
    active = list(range(n_est))
    groups = list(groups.values())
    live = list(enumerate(groups))          # (critic, its live estimators)
    diverged: dict[str, int] = {}
    block = max(1, int(cfg.log_every))

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, unit="step", desc=f"{task.name}", dynamic_ncols=True, file=sys.stderr)

    start = 0
    for step in range(steps):
        _check_stop()
        x, y = task.sample(cfg.batch_size, float(levels[step]), generator)
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
        if stacked is not None:
            all_scores, total = scores_of(stacked, x, y), None
            for g, members in live:
                loss = _step_group(heads, members, all_scores[g], buffer, step)
                total = loss if total is None else total + loss
            if total is not None and total.requires_grad:
                total.backward()
        else:
            # each critic's backward right after its forward: its activations are freed (and their
            # memory reused, warm in cache, by the next critic) before the next forward
            for g, members in live:
                loss = _step_group(heads, members, scores_of(critics[g], x, y), buffer, step)
                if loss.requires_grad:
                    loss.backward()
        if optimizer is not None:
            optimizer.step()
        if step + 1 - start >= block or step + 1 == steps:
            host[:, start:step + 1] = nats_to_bits(buffer[:, start:step + 1].double().cpu().numpy())
            for e in list(active):
                bad = np.flatnonzero(~np.isfinite(host[e, start:step + 1]))
                if bad.size:
                    first = start + int(bad[0])
                    diverged[cfg.estimators[e]] = first
                    host[e, first:] = np.nan
                    active.remove(e)
            # a critic trains on while any estimator reading it is live
            live = [(g, [e for e in members if e in active]) for g, members in enumerate(groups)]
            live = [(g, members) for g, members in live if members]
            if on_block is not None:        # e.g. append the block to estimates.csv (whole lines, flushed)
                on_block(levels, host, start, step + 1)
            if bar is not None:
                bar.set_postfix({"true": f"{levels[step]:g}",
                                 **{cfg.estimators[e][:9]: f"{host[e, step]:.2f}" for e in active[:4]}},
                                refresh=False)
                bar.update(step + 1 - start)
            start = step + 1
            if not active:
                break
    if bar is not None:
        bar.close()
    return host, diverged
