"""The streaming protocol's training loop: the estimators' critics train on a shared stream of
batches and every estimator's estimate is recorded at every step.

* Paired comparisons: all estimators see the **same batch** at every step, so sampling is paid
  once and differences between estimators are not sampling noise.
* Reproducible: the batch stream depends only on ``seed``; each critic's initialisation depends on
  (seed, training objective, critic), so an estimator's curve is the same whether it trains alone
  or with others (same device).
* One critic per training objective: estimators that differ only in how the estimate is read off
  the trained critic (JS and SMILE-tau all train with the JS f-GAN objective; paper 002 §2) share
  one critic; the paper's 8 estimators train 5 critics.
* No per-step host syncs: estimates go into a device buffer and are read back in blocks, where
  divergence (a non-finite estimate) is detected; a diverged estimator stops training, its step is
  recorded and the run carries on.
* Resumable: at block ends the whole training state (critics, heads, optimizer, the batch stream's
  generator, the estimates so far) can be captured (:class:`TrainingState`); training resumed from
  it continues with the same numbers as if it had never stopped.
"""
from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from ..critics import make_critic
from ..errors import Terminated
from ..estimators import make_estimator, training_groups
from ..kernels import make_adam
from ..seeding import derived_seed
from ..units import nats_to_bits

#: engine used by ``auto`` per device type (see benchmarks/bench_training.py for the measurements)
STACKED_DEFAULT = {"cpu": "sequential", "cuda": "stacked", "mps": "stacked"}


@dataclass
class TrainingState:
    """Everything training needs to continue from step ``step`` with the same numbers."""

    step: int
    critics: list                  # state_dicts of the critics in use (or of the stacked module)
    heads: list                    # state_dicts of the estimator heads
    optimizer: dict | None
    generator: torch.Tensor        # the batch stream's generator state
    host: np.ndarray               # (n_estimators, steps) estimates so far, bits
    diverged: dict = field(default_factory=dict)
    active: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"step": self.step, "critics": self.critics, "heads": self.heads, "optimizer": self.optimizer,
                "generator": self.generator, "host": self.host, "diverged": self.diverged, "active": self.active}

    @classmethod
    def from_dict(cls, d: dict) -> "TrainingState":
        return cls(**d)


class _StopFlag:
    """SIGTERM's request to stop at the next step (set by the run's signal handler)."""

    requested = False


STOP = _StopFlag()


def check_stop() -> None:
    if STOP.requested:
        STOP.requested = False
        raise Terminated("SIGTERM")


def build_models(cfg, dim_x: int, dim_y: int, device):
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


def choose_engine(cfg, device: torch.device) -> str:
    """``sequential``: one critic after another (on CPU each GEMM goes through oneDNN);
    ``stacked``: all joint critics in one batched pass (:mod:`mibench.critics.stacked`).
    ``auto`` picks what ``benchmarks/bench_training.py`` measured faster for the device."""
    if cfg.engine != "auto":
        return cfg.engine
    if len(training_groups(cfg.estimators)) < 2 or cfg.critic.lower() not in ("joint", "concat"):
        return "sequential"
    return STACKED_DEFAULT[device.type]




def train(cfg, task, schedule, critics, heads, groups, device, progress, on_block=None, state=None,
          on_checkpoint=None, checkpoint_every: float | None = None):
    """Train and return ``(estimates (n_estimators, steps) in bits, {estimator: diverged step})``.

    ``on_block(true_mi, estimates, start, stop)`` is called after each logging block;
    ``on_checkpoint(state)`` with a :class:`TrainingState` at the end of a block when
    ``checkpoint_every`` seconds have passed since the last one (0: every block); ``state``
    resumes training from a captured state."""
    stacked = None
    if choose_engine(cfg, device) == "stacked":
        from ..critics.stacked import StackedJointCritics

        stacked = StackedJointCritics(critics).to(device)
        critics = [stacked]
    params = [p for m in (*critics, *heads) for p in m.parameters()]
    with _precision(cfg.precision, device) as scores_of:
        return _loop(cfg, task, schedule, critics, heads, groups, device, progress, params, stacked, scores_of,
                     on_block, state, on_checkpoint, checkpoint_every)


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


def _loop(cfg, task, schedule, critics, heads, groups, device, progress, params, stacked, scores_of, on_block=None,
          state=None, on_checkpoint=None, checkpoint_every=None):
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
    start = 0
    if state is not None:                   # resume: every piece of state as it was at the block's end
        for module, saved in zip(critics, state.critics):
            module.load_state_dict(saved)
        for head, saved in zip(heads, state.heads):
            head.load_state_dict(saved)
        if optimizer is not None and state.optimizer is not None:
            optimizer.load_state_dict(state.optimizer)
        generator.set_state(state.generator)
        host[:, :state.step] = state.host[:, :state.step]
        diverged, active, start = dict(state.diverged), list(state.active), state.step
        live = [(g, [e for e in members if e in active]) for g, members in enumerate(groups)]
        live = [(g, members) for g, members in live if members]

    def capture(step_done: int) -> TrainingState:
        return TrainingState(step_done, [m.state_dict() for m in critics], [h.state_dict() for h in heads],
                             optimizer.state_dict() if optimizer is not None else None, generator.get_state(),
                             host.copy(), dict(diverged), list(active))

    last_checkpoint = time.monotonic()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, initial=start, unit="step", desc=f"{task.name}", dynamic_ncols=True, file=sys.stderr)

    for step in range(start, steps):
        check_stop()
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
            if on_checkpoint is not None and start < steps and \
                    time.monotonic() - last_checkpoint >= (checkpoint_every or 0.0):
                on_checkpoint(capture(start))
                last_checkpoint = time.monotonic()
    if bar is not None:
        bar.close()
    return host, diverged
