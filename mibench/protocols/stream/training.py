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

from mibench.critics import make_critic
from mibench.critics.kernels import make_adam
from mibench.estimators import make_estimator, training_groups
from mibench.protocols.runtime import check_stop
from mibench.utils.seeding import derived_seed
from mibench.utils.units import nats_to_bits

#: engine used by ``auto`` per device type: sequential on CPU, where stacking ran slower; stacked elsewhere
#: (untimed there; benchmarks/README.md, "Performance")
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


def build_models(cfg, dim_x: int, dim_y: int, device, shapes=None):
    """Critics, estimator heads and the groups that share a critic.

    One critic per training group (:func:`mibench.estimators.training_groups`: estimators whose
    training is the same objective on the same scores, e.g. JS and SMILE-tau, share one), each
    initialised from a seed derived from (seed, training objective, critic), so an estimator's
    curve is the same whether it trains alone or with others.  One head per estimator.
    Returns ``(critics, heads, groups)`` with ``groups`` the estimator indices of each critic,
    keyed by training objective in the critics' order.  ``shapes``: the task's image shapes for an
    image critic (:func:`mibench.tasks.shapes.image_shapes`; None: read off the dimensions).
    """
    heads = [make_estimator(name).to(device) for name in cfg.estimators]
    groups = training_groups(cfg.estimators)
    critics = []
    for key in groups:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derived_seed(cfg.seed, key, cfg.critic, cfg.hidden, cfg.layers, cfg.embed))
            critic = make_critic(cfg.critic, dim_x, dim_y, cfg.hidden, cfg.layers, cfg.embed, shapes=shapes)
        critics.append(critic.to(device))
    return critics, heads, groups


def choose_engine(cfg, device: torch.device) -> str:
    """``sequential``: one critic after another (on CPU each GEMM goes through oneDNN);
    ``stacked``: all joint critics in one batched pass (:mod:`mibench.critics.stacked`).
    ``auto`` picks :data:`STACKED_DEFAULT`'s engine for the device."""
    if cfg.engine != "auto":
        return cfg.engine
    if len(training_groups(cfg.estimators)) < 2 or cfg.critic.lower() not in ("joint", "concat"):
        return "sequential"
    return STACKED_DEFAULT[device.type]


@dataclass
class TrainingRun:
    """What a streaming run trains: its config, task and MI schedule, the critics, the heads (one per
    estimator) and the groups of estimators sharing a critic (:func:`build_models`), the device."""

    cfg: object
    task: object
    schedule: object
    critics: list
    heads: list
    groups: dict
    device: torch.device

    @property
    def ceilings(self) -> dict:
        """Estimator -> the largest estimate its head can report at this batch size (bits; inf: none)."""
        return {n: nats_to_bits(h.ceiling_nats(self.cfg.batch_size)) for n, h in zip(self.cfg.estimators, self.heads)}


@dataclass
class TrainingHooks:
    """How training reports: a progress bar; ``on_block(true_mi, estimates, start, stop)`` after each
    logging block; ``on_checkpoint(state)`` with a :class:`TrainingState` at a block's end once
    ``checkpoint_every`` seconds have passed since the last one (0: every block)."""

    progress: bool = False
    on_block: object = None
    on_checkpoint: object = None
    checkpoint_every: float | None = None


def train(run: TrainingRun, hooks: TrainingHooks | None = None, state: TrainingState | None = None):
    """Train and return ``(estimates (n_estimators, steps) in bits, {estimator: diverged step})``;
    ``state`` resumes training from a captured state."""
    hooks = hooks or TrainingHooks()
    critics, stacked = run.critics, None
    if choose_engine(run.cfg, run.device) == "stacked":
        from mibench.critics.stacked import StackedJointCritics

        stacked = StackedJointCritics(critics).to(run.device)
        critics = [stacked]
    params = [p for m in (*critics, *run.heads) for p in m.parameters()]
    with _precision(run.cfg.precision, run.device) as scores_of:
        loop = _Loop(run, critics, stacked, params, scores_of)
        return loop.train(hooks, state)


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


class _Loop:
    """The training loop's state: the critics in use, the optimizer, the batch stream, the estimates
    (a device buffer, read back per block) and which estimators are still live."""

    def __init__(self, run: TrainingRun, critics, stacked, params, scores_of):
        self.run, self.critics, self.stacked, self.scores_of = run, critics, stacked, scores_of
        n_est, steps = len(run.heads), run.cfg.steps
        self.optimizer = make_adam(params, run.cfg.lr) if params else None
        self.generator = torch.Generator(device=run.device).manual_seed(run.cfg.seed)
        self.levels = run.schedule.true_mi()
        self.buffer = torch.full((n_est, steps), float("nan"), device=run.device)
        self.host = np.full((n_est, steps), np.nan)
        self.active = list(range(n_est))
        self.groups = list(run.groups.values())
        self.live = list(enumerate(self.groups))          # (critic, its live estimators)
        self.diverged: dict[str, int] = {}

    def restore(self, state: TrainingState) -> int:
        """Every piece of state as it was at the block's end; returns the step to continue from."""
        for module, saved in zip(self.critics, state.critics):
            module.load_state_dict(saved)
        for head, saved in zip(self.run.heads, state.heads):
            head.load_state_dict(saved)
        if self.optimizer is not None and state.optimizer is not None:
            self.optimizer.load_state_dict(state.optimizer)
        self.generator.set_state(state.generator)
        self.host[:, :state.step] = state.host[:, :state.step]
        self.diverged, self.active = dict(state.diverged), list(state.active)
        self._update_live()
        return state.step

    def capture(self, step_done: int) -> TrainingState:
        opt = self.optimizer.state_dict() if self.optimizer is not None else None
        critics = [m.state_dict() for m in self.critics]
        heads = [h.state_dict() for h in self.run.heads]
        return TrainingState(step_done, critics, heads, opt, self.generator.get_state(), self.host.copy(),
                             dict(self.diverged), list(self.active))

    def _update_live(self) -> None:
        """A critic trains on while any estimator reading it is live."""
        live = [(g, [e for e in members if e in self.active]) for g, members in enumerate(self.groups)]
        self.live = [(g, members) for g, members in live if members]

    def step(self, step: int) -> None:
        cfg, heads = self.run.cfg, self.run.heads
        x, y = self.run.task.sample(cfg.batch_size, float(self.levels[step]), self.generator)
        if self.optimizer is not None:
            self.optimizer.zero_grad(set_to_none=True)
        if self.stacked is not None:
            all_scores, total = self.scores_of(self.stacked, x, y), None
            for g, members in self.live:
                loss = _step_group(heads, members, all_scores[g], self.buffer, step)
                total = loss if total is None else total + loss
            if total is not None and total.requires_grad:
                total.backward()
        else:
            # each critic's backward right after its forward: its activations are freed (and their
            # memory reused, warm in cache, by the next critic) before the next forward
            for g, members in self.live:
                loss = _step_group(heads, members, self.scores_of(self.critics[g], x, y), self.buffer, step)
                if loss.requires_grad:
                    loss.backward()
        if self.optimizer is not None:
            self.optimizer.step()

    def end_block(self, start: int, stop: int) -> None:
        """Read the block's estimates back; an estimator with a non-finite one has diverged there."""
        self.host[:, start:stop] = nats_to_bits(self.buffer[:, start:stop].double().cpu().numpy())
        for e in list(self.active):
            bad = np.flatnonzero(~np.isfinite(self.host[e, start:stop]))
            if bad.size:
                first = start + int(bad[0])
                self.diverged[self.run.cfg.estimators[e]] = first
                self.host[e, first:] = np.nan
                self.active.remove(e)
        self._update_live()

    def train(self, hooks: TrainingHooks, state: TrainingState | None):
        cfg, steps = self.run.cfg, self.run.cfg.steps
        block = max(1, int(cfg.log_every))
        start = self.restore(state) if state is not None else 0
        last_checkpoint = time.monotonic()
        bar = _progress_bar(self.run.task.name, steps, start) if hooks.progress else None
        for step in range(start, steps):
            check_stop()
            self.step(step)
            if step + 1 - start >= block or step + 1 == steps:
                self.end_block(start, step + 1)
                if hooks.on_block is not None:      # e.g. append the block to estimates.csv (whole lines, flushed)
                    hooks.on_block(self.levels, self.host, start, step + 1)
                if bar is not None:
                    bar.set_postfix({"true": f"{self.levels[step]:g}",
                                     **{cfg.estimators[e][:9]: f"{self.host[e, step]:.2f}" for e in self.active[:4]}},
                                    refresh=False)
                    bar.update(step + 1 - start)
                start = step + 1
                if not self.active:
                    break
                if hooks.on_checkpoint is not None and start < steps and \
                        time.monotonic() - last_checkpoint >= (hooks.checkpoint_every or 0.0):
                    hooks.on_checkpoint(self.capture(start))
                    last_checkpoint = time.monotonic()
        if bar is not None:
            bar.close()
        return self.host, self.diverged


def _progress_bar(name: str, steps: int, start: int):
    from tqdm.auto import tqdm

    return tqdm(total=steps, initial=start, unit="step", desc=f"{name}", dynamic_ncols=True, file=sys.stderr)
