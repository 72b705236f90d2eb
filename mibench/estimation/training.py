"""The held-out training loop behind :func:`mibench.estimate` for critic-bound estimators: train a
critic on minibatches of the training pairs, evaluate the bound on the held-out pairs every
``eval_every`` steps, keep the best critic state, stop early.

A training batch of ``batch_size`` pairs is scored in blocks of ``block`` x ``block`` pairs: the
diagonal pairs of a block are joint samples, its off-diagonal pairs stand in for the product of
marginals (as in the streaming harness, where the block is the whole batch).  Held-out values are
the bound averaged over blocks of up to :data:`EVAL_BLOCK` held-out pairs (of the first
:data:`SELECTION_MAX_PAIRS`), with the spread over the blocks / sqrt(blocks) as the standard error;
the reported value of the chosen checkpoint is the bound on the held-out score matrix
(:func:`mibench.estimation.readout.full_matrix_value`: every pair of up to 4,096 held-out pairs,
read in tiles).

:func:`train_held_out` takes the pairs as one :class:`HeldOutData` and the loop's settings (step
budget, batch and block sizes, evaluation and early-stopping rule, seed, training noise) as one
:class:`LoopSettings`.
"""
from __future__ import annotations

import copy
import math
import sys
from dataclasses import dataclass, field

import numpy as np
import torch

from mibench.estimation.readout import full_matrix_value
from mibench.estimators.trained import MIN_EVALUATIONS, within_noise_of_zero

EVAL_BLOCK = 125      # held-out blocks have at most EVAL_BLOCK pairs
SELECTION_MAX_PAIRS = 16_000   # the evaluations that choose the checkpoint read at most this many held-out pairs


@dataclass
class TrainingOutcome:
    """What :func:`train_held_out` returns; values in nats."""

    raw: float                  # held-out value of the best checkpoint, re-read on reshuffled blocks
    stderr: float
    best_step: int
    status: str                 # one of mibench.estimation.result.STATUSES
    curve: np.ndarray           # training estimate per step (NaN after the last step run)
    train_estimate: float       # mean of the last 10% of the training curve
    diverged_at: int | None
    steps_run: int
    held: list = field(default_factory=list)   # (step, value, stderr) per evaluation


@dataclass(frozen=True, eq=False)
class HeldOutData:
    """The training and held-out pairs of one critic, float32 tensors on one device.

    Parameters
    ----------
    x_train, y_train : the training pairs (the minibatches are drawn from them).
    x_test, y_test : the held-out pairs (empty: no held-out readout, status ``train_only``).
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    @property
    def n_train(self) -> int:
        return self.x_train.shape[0]

    @property
    def n_test(self) -> int:
        return self.x_test.shape[0]

    def selection_pairs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The first :data:`SELECTION_MAX_PAIRS` held-out pairs, which the checkpoint evaluations read:
        128 blocks of 125 put the standard error of a held-out value at sd(block value) / 11, and
        more pairs cost time in every evaluation (linear in n_test: docs/estimators.md, "Procedure") for
        a choice between checkpoints that no longer changes.  The held-out part is a seeded random draw,
        so its first pairs are a random subset."""
        return self.x_test[:SELECTION_MAX_PAIRS], self.y_test[:SELECTION_MAX_PAIRS]


@dataclass(frozen=True)
class LoopSettings:
    """The settings of one run of :func:`train_held_out`.

    Parameters
    ----------
    steps : the step budget.
    batch, block : pairs per step and the block size they are scored in (``batch`` a multiple of ``block``).
    eval_every, patience, min_steps : a held-out evaluation every ``eval_every`` steps; stop after
        ``patience`` evaluations without a new best (0: never), but not before ``min_steps``.
    seed : seeds the minibatch draws; ``seed + 1`` reshuffles the held-out blocks of the final readout.
    start_is_candidate : evaluate the starting critic as the step-0 candidate (the Gaussian start).
    noise : standard deviation of Gaussian noise added to every training batch's x and y (drawn from
        the seeded minibatch generator; held-out pairs are scored clean).  Training on noisy copies
        regularises the critic (Bishop 1995, "Training with noise is equivalent to Tikhonov
        regularization"); any critic still gives a valid bound on the clean held-out pairs.
    """

    steps: int
    batch: int
    block: int
    eval_every: int
    patience: int
    min_steps: int
    seed: int
    start_is_candidate: bool
    noise: float = 0.0


@dataclass
class _LoopState:
    """The running state of :func:`train_held_out`."""

    held: list = field(default_factory=list)   # (step, value, stderr) per held-out evaluation
    best: tuple = (-math.inf, 0.0, 0, None)    # (value, stderr, step, critic state) of the best checkpoint
    since_best: int = 0                        # evaluations since the last new best
    step: int = 0                              # the last step run
    stop: str = "budget"                       # why training stopped: budget, patience or diverged
    diverged_at: int | None = None             # the step whose training loss was non-finite


def train_held_out(net, head, optimizer, data: HeldOutData, loop: LoopSettings,
                   progress: bool = False) -> TrainingOutcome:
    """Train ``net`` (a critic) with ``head`` (an estimator) and read the estimate on held-out pairs.

    Parameters
    ----------
    net, head, optimizer : the critic, the estimator head, and the optimizer over their parameters
        (``None`` when nothing trains).
    data : the training and held-out pairs (:class:`HeldOutData`); with no held-out pairs the
        training tail is reported (status ``train_only``).
    loop : the step budget, batch and block sizes, evaluation and early-stopping rule, seed, step-0
        candidate and training noise (:class:`LoopSettings`).
    progress : print every held-out evaluation to stderr.
    """
    gen = torch.Generator(device=data.x_train.device).manual_seed(loop.seed)
    buf = torch.full((loop.steps,), float("nan"), device=data.x_train.device)
    state = _LoopState()
    if data.n_test and loop.start_is_candidate:
        v0, se0 = held_out_value(net, head, *data.selection_pairs(), seed=None)
        state.held.append((0, v0, se0))
        if math.isfinite(v0):
            state.best = (v0, se0, 0, copy.deepcopy(net.state_dict()))
    for step in range(1, loop.steps + 1):
        state.step = step
        xb, yb = _draw_batch(data, loop, gen)
        net.train()
        loss, value = _block_loss(head, net.block_scores(xb, yb))
        buf[step - 1] = value
        if not torch.isfinite(loss):
            state.diverged_at = step - 1
            state.stop = "diverged"
            break
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
            if loss.requires_grad:
                loss.backward()
            optimizer.step()
        if data.n_test and (step % loop.eval_every == 0 or step == loop.steps):
            if _evaluate(net, head, data, loop, state, progress):
                state.stop = "patience"
                break
    return _outcome(net, head, data, loop, buf, state)


def _draw_batch(data: HeldOutData, loop: LoopSettings, gen: torch.Generator):
    """A seeded minibatch of ``loop.batch`` training pairs, shaped (blocks, ``loop.block``, dim), with
    the training noise added."""
    dev = data.x_train.device
    idx = torch.randint(0, data.n_train, (loop.batch,), generator=gen, device=dev)
    xb = data.x_train[idx].view(-1, loop.block, data.x_train.shape[1])
    yb = data.y_train[idx].view(-1, loop.block, data.y_train.shape[1])
    if loop.noise:
        xb = xb + loop.noise * torch.randn(xb.shape, generator=gen, device=dev)
        yb = yb + loop.noise * torch.randn(yb.shape, generator=gen, device=dev)
    return xb, yb


def _evaluate(net, head, data: HeldOutData, loop: LoopSettings, state: _LoopState, progress: bool) -> bool:
    """One held-out evaluation at ``state.step``: record it and keep a new best checkpoint.  True when
    ``loop.patience`` evaluations in a row brought no new best and ``loop.min_steps`` are done."""
    v, se = held_out_value(net, head, *data.selection_pairs(), seed=None)
    state.held.append((state.step, v, se))
    if progress:
        print(f"step {state.step}: held-out {v:.4f} +- {se:.4f} nats", file=sys.stderr)
    if math.isfinite(v) and v > state.best[0]:
        state.best = (v, se, state.step, copy.deepcopy(net.state_dict()))
        state.since_best = 0
        return False
    state.since_best += 1
    return bool(loop.patience and state.since_best >= loop.patience and state.step >= loop.min_steps)


def _outcome(net, head, data: HeldOutData, loop: LoopSettings, buf: torch.Tensor, state: _LoopState) -> TrainingOutcome:
    """The training curve, the best checkpoint's final held-out readout (loaded into ``net``) and the status."""
    step = state.step
    curve = np.full(loop.steps, np.nan)
    curve[:step] = buf[:step].double().cpu().numpy()
    diverged_at = state.diverged_at
    bad = np.flatnonzero(~np.isfinite(curve[:step]))
    if bad.size and diverged_at is None:
        diverged_at = int(bad[0])
    tail = curve[max(0, step - max(1, step // 10)):step]
    train_est = float(np.nanmean(tail)) if np.isfinite(tail).any() else float("nan")

    if not data.n_test:
        return TrainingOutcome(train_est, float("nan"), step, "train_only", curve, train_est, diverged_at, step,
                               state.held)
    best = state.best
    if best[3] is not None:
        net.load_state_dict(best[3])
        # final readout of the chosen checkpoint on reshuffled held-out blocks (different negatives
        # than the ones it was selected on, which damps the max-over-evaluations selection bias)
        _, se = held_out_value(net, head, data.x_test, data.y_test, seed=loop.seed + 1)
        raw = full_matrix_value(net, head, data.x_test, data.y_test)
        best_step = best[2]
    else:
        raw, se, best_step = float("nan"), float("nan"), 0
    status = _status(state.held, best, state.stop, diverged_at, raw, se)
    return TrainingOutcome(raw, se, best_step, status, curve, train_est, diverged_at, step, state.held)



def _status(held, best, stop, diverged_at, raw, se) -> str:
    if diverged_at is not None and stop == "diverged":
        return "diverged"
    if len(held) < MIN_EVALUATIONS:
        return "too_few_evaluations"    # too few held-out evaluations to tell a plateau from a rise
    if stop == "budget" and best[2] > held[int(0.75 * len(held))][0]:
        return "still_increasing"   # checked first: a value still rising at the budget's end may be low for that reason
    near_zero = within_noise_of_zero(raw, se)
    if near_zero:
        return near_zero[0]
    last = held[-1][1] if held else raw
    if math.isfinite(last) and best[0] - last > max(2 * best[1], 0.02):
        return "overfit"
    return "converged"


def _block_loss(head, scores: torch.Tensor):
    """(mean training loss, mean reported estimate) over the blocks: a ``batched`` head takes all
    blocks at once (its bound reduces over the last two dimensions), others one block at a time."""
    if head.batched:
        loss, value = head(scores)
        return loss.mean(), value.detach().mean()
    losses, values = zip(*(head(scores[i]) for i in range(scores.shape[0])))
    return torch.stack(losses).mean(), torch.stack([v.detach() for v in values]).mean()


@torch.no_grad()
def held_out_value(net, head, x, y, seed=None) -> tuple[float, float]:
    """(mean, standard error) in nats of the estimator's reported bound over held-out blocks of up to
    EVAL_BLOCK pairs (at least 4 blocks where the held-out part allows); ``seed`` reshuffles the
    pairs into blocks first."""
    n = x.shape[0]
    b = max(2, min(EVAL_BLOCK, n // 4))
    nb = n // b
    if seed is not None:
        idx = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).to(x.device)
        x, y = x[idx], y[idx]
    xb, yb = x[:nb * b].view(nb, b, -1), y[:nb * b].view(nb, b, -1)
    net.eval()
    vals = []
    chunk = max(1, 4_000_000 // (b * b * 64))   # bound the (G, b, b, hidden) activation memory
    for i in range(0, nb, chunk):
        sc = net.block_scores(xb[i:i + chunk], yb[i:i + chunk])
        if head.batched:
            vals.append(head.value(sc).reshape(-1))
        else:
            vals.append(torch.stack([head.value(sc[j]) for j in range(sc.shape[0])]))
    net.train()
    v = torch.cat(vals).double()
    if not torch.isfinite(v).all():
        return float("nan"), float("nan")
    se = float(v.std() / math.sqrt(v.numel())) if v.numel() > 1 else float("nan")
    return float(v.mean()), se
