"""The members of a benchmark cell trained as one: :class:`MemberTraining`, the part of
:class:`~mibench.estimators.trained.HeldOutEstimator` that estimates one estimator on S datasets with S
seeds (a cell of the reference table: the same estimator and task, seeds 0..S-1), and the training state
both share (:class:`Best`, :func:`load_best`).

Each member is its separate estimate: its own data draw, split, jitter and reduction, its networks built
with its seed (the same initialisation), its minibatches from its own generator, its validation loss and
best state per network, its readout and its details (``last``).  An estimator whose readout knows about
members (:meth:`MemberTraining.readout_members`: ``minde-*``, ``fmmi-*``) reads them all out through the
stacked networks, each member's rows with the draws its own readout makes.  What they share is the training loop:
the members' networks run as one stacked network (:mod:`mibench.estimators.members`) under one Adam over
the stacked weights (Adam is elementwise, so each member's update is the one its separate run makes).
Two things differ from separate runs: the random draws inside the losses (diffusion times and noise,
flow-matching partners) come from torch's global generator for all members at once, so a member draws
other numbers than its separate run (the same distribution), and the stacked matrix products may round
differently in the last float32 bit.  An estimator that cannot be stacked trains its members one after
another; a single member is always its separate estimate.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field, replace

from mibench.errors import MibenchError
from mibench.utils.threads import torch_threads


@dataclass(frozen=True)
class Best:
    """One network's best validation state: its loss, its weights and the step it was reached at; and
    the whole validation curve ((step, loss) per evaluation) of its training."""

    loss: float = math.inf
    state: dict | None = None
    step: int = 0
    curve: tuple = ()


def held_out_reads(read, tensors: list) -> list[tuple]:
    """(value, details, the value on as many training pairs) per member: ``read(xs, ys)`` ((value,
    details) per member of ``xs``, ``ys``) on each member's test pairs and on its first min(training,
    test) training pairs (``tensors[i]``: member i's six of ``tensors()``, all members of one size), without
    gradients: the two readouts of ``read_fitted``."""
    import torch

    k = min(tensors[0][0].shape[0], tensors[0][2].shape[0])
    with torch.no_grad():
        test = read([t[2] for t in tensors], [t[5] for t in tensors])
        train = read([t[0][:k] for t in tensors], [t[3][:k] for t in tensors])
    return [(value, details, on_training) for (value, details), (on_training, _) in zip(test, train)]


def training_threads(threads: int, device):
    """torch's threads at ``threads`` (:class:`~mibench.estimators.trained.TrainedSettings`: 0 keeps the caller's
    count) while the block trains and reads out on a CPU, the caller's count restored afterwards; on other
    devices the count is left alone."""
    return torch_threads(threads if device.type == "cpu" else None)


def load_best(owner: str, models: dict, best: dict) -> None:
    """Load each network's best state; a network with no finite validation loss is a one-line error."""
    for key, model in models.items():
        if best[key].state is None:
            raise MibenchError(f"{owner}: training diverged (no finite validation loss)")
        model.load_state_dict(best[key].state)


def cuda_devices(device) -> list:
    """The devices whose generator :func:`torch.random.fork_rng` must fork (CUDA only)."""
    return [device] if device.type == "cuda" else []


@dataclass
class Member:
    """One member's outcome in :meth:`MemberTraining.estimate_members`: its value in nats, the details a
    separate estimate leaves in ``last``, its share of the wall time, and the error a separate estimate
    would have raised (then ``value`` is NaN); ``batched``: whether it trained stacked with the others;
    ``status``: the estimator's own ``status`` after this member (empty where it sets none)."""

    value: float = math.nan
    last: dict = field(default_factory=dict)
    seconds: float = math.nan
    error: Exception | None = None
    batched: bool = False
    status: str = ""        # the estimator's ``status`` after this member's readout, where it sets one


class MemberTraining:
    """:meth:`estimate_many` and :meth:`estimate_members` of a trained sample estimator (module docstring)."""

    def estimate_many(self, datasets: list, seeds: list, stacked: bool | None = None) -> list[float]:
        """I(X;Y) in nats of each ``(x, y)`` of ``datasets`` with its seed, as separate :meth:`estimate`
        calls give them (module docstring; ``stacked``: :meth:`estimate_members`); the first failing
        member's error is raised."""
        out = self.estimate_members(datasets, seeds, stacked)
        for member in out:
            if member.error is not None:
                raise member.error
        return [member.value for member in out]

    def estimate_members(self, datasets: list, seeds: list, stacked: bool | None = None) -> list[Member]:
        """One :class:`Member` per ``(x, y)`` of ``datasets`` and seed of ``seeds``: trained as one stacked
        network (module docstring) where ``stacked`` is True, or None and :meth:`batches_members` (where
        it is faster), and the networks stack; else one :meth:`estimate` after another.  Never raises for
        a member: its error is in its :class:`Member`."""
        from mibench.estimators.members import Unstackable

        if len(datasets) != len(seeds):
            raise MibenchError(f"{self.name}: {len(datasets)} datasets for {len(seeds)} seeds")
        stack = self.batches_members() if stacked is None else bool(stacked) and self.stacks_members()
        if len(seeds) > 1 and stack:
            try:
                return self._estimate_stacked(datasets, [int(seed) for seed in seeds])
            except Unstackable:
                pass
        return [self._estimate_member(x, y, seed) for (x, y), seed in zip(datasets, seeds)]

    def _estimate_member(self, x, y, seed: int) -> Member:
        """One member as a separate :meth:`estimate` (its error kept, not raised)."""
        t0 = time.perf_counter()
        try:
            value = self.estimate(x, y, seed=int(seed))
        except Exception as exc:     # the member's own outcome, as a separate run records it
            return Member(error=exc, seconds=time.perf_counter() - t0)
        return Member(value, dict(self.last), time.perf_counter() - t0, status=str(getattr(self, "status", "") or ""))

    def _estimate_stacked(self, datasets: list, seeds: list[int]) -> list[Member]:
        """The members trained as one stacked network; raises
        :class:`~mibench.estimators.members.Unstackable` (before any training) where they cannot be.
        Each member's ``seconds`` is an equal share of the wall time."""

        from mibench.estimators.members import Unstackable
        from mibench.utils.device import resolve_device

        device = resolve_device(self.settings.device)
        t0 = time.perf_counter()
        out = [Member(batched=True) for _ in seeds]
        prepared = {}        # member -> (its prepared split, (its reduction, its sides without a density))
        for i, ((x, y), seed) in enumerate(zip(datasets, seeds)):
            try:
                split = self.split(x, y, seed)
                if split is None:        # as estimate(): nothing to carry
                    out[i].value, out[i].last = 0.0, {}
                else:
                    prepared[i] = (self.prepare(split), (self.reduction, self.intrinsic))
            except Exception as exc:
                out[i].error = exc
        shapes = {(sp.x_train.shape, sp.y_train.shape, sp.x_val.shape[0]) for sp, _ in prepared.values()}
        if len(shapes) > 1:
            raise Unstackable("the members' prepared data differ in shape")
        with training_threads(self.settings.threads, device):      # as estimate()
            if len(prepared) > 1:
                self._fit_and_read_stacked(prepared, out, device, seeds)
            elif prepared:               # one member left to train: its separate estimate
                (i,) = prepared
                out[i] = self._estimate_member(*datasets[i], seeds[i])
        share = (time.perf_counter() - t0) / len(seeds)
        for member in out:
            member.seconds = share
        return out

    def _fit_and_read_stacked(self, prepared: dict, out: list[Member], device, seeds: list[int]) -> None:
        """Train the ``prepared`` members stacked and read each one out into ``out`` (``read_fitted``, as a
        separate estimate reads); an error of the stacked training is
        :class:`~mibench.estimators.members.Unstackable` (the members then run one at a time and each meets
        the error, if it is one, in its own run)."""
        from mibench.estimators.members import Unstackable

        index = sorted(prepared)
        tensors = {i: self.tensors(prepared[i][0], device) for i in index}
        datas = [(t[0], t[3], t[1], t[4]) for t in (tensors[i] for i in index)]
        try:
            fitted = self.fit_members(datas, device, [seeds[i] for i in index])
        except Unstackable:
            raise
        except Exception as exc:     # e.g. a network that reads a layer's weight itself: one at a time
            raise Unstackable(f"stacked training failed: {exc}") from exc
        reads = self._read_stacked(dict(zip(index, fitted)), tensors)
        for i, result in zip(index, fitted):
            if isinstance(result, Exception):
                out[i].error = result
                continue
            models, best = result
            self.reduction, self.intrinsic = prepared[i][1]
            try:
                out[i].value = self.read_fitted(models, best, tensors[i], device, reads.get(i))
            except Exception as exc:
                out[i].error = exc
                continue
            out[i].last, out[i].status = dict(self.last), str(getattr(self, "status", "") or "")

    def readout_members(self, folds: dict, xs: list, ys: list) -> list[tuple[float, dict]] | None:
        """``readout`` of every member at once: ``folds`` the members' networks stacked (by key, each
        member's weights in their best state), ``xs[i]``, ``ys[i]`` member i's pairs (as many for each).
        Each member's (value, details) is the one its own ``readout`` gives, up to the rounding of the
        stacked matrix products.  It must not read ``reduction`` or ``intrinsic`` (they hold some member's
        when it runs); it is used only where the class that defines it also defines ``readout``, so that a
        subclass with a readout of its own is read out one member at a time.  None (this base): the members
        are read out one at a time."""
        return None

    def _read_stacked(self, fitted: dict, tensors: dict) -> dict:
        """member -> (value, details, value on as many training pairs) for the fitted members of a cell
        (``fitted[i]`` (networks, best) or an error) read out stacked (:meth:`readout_members`) where this
        estimator can; {} where it cannot (then each member is read out on its own networks)."""
        from mibench.estimators.members import stack_members

        ok = [i for i, r in fitted.items() if not isinstance(r, Exception)]
        if len(ok) < 2 or _owner(type(self), "readout_members") is not _owner(type(self), "readout"):
            return {}
        if len({(tensors[i][0].shape[0], tensors[i][2].shape[0]) for i in ok}) > 1:
            return {}
        try:
            # stacking copies the members' best weights into one network (each member's module then
            # holds views of it, the same values)
            folds = {key: stack_members([fitted[i][0][key] for i in ok]) for key in fitted[ok[0]][0]}
            for fold in folds.values():
                fold.requires_grad_(False)       # a readout that differentiates (fmmi's) needs no weight gradient
            reads = held_out_reads(lambda xs, ys: self.readout_members(folds, xs, ys), [tensors[i] for i in ok])
        except Exception:        # Unstackable, an error some member's own readout meets, or no stacked readout
            return {}
        return dict(zip(ok, reads))

    def fit_members(self, datas: list, device, seeds: list[int]) -> list:
        """``fit`` for each member (``datas[i]`` = (x_train, y_train, x_val, y_val), ``seeds[i]``), the
        members trained as one stacked network (:meth:`train_members`): per member ``(networks in their
        best states, {key: Best})``, or the error its separate ``fit`` would have raised."""
        import torch

        members = []
        for seed in seeds:
            with torch.random.fork_rng(devices=cuda_devices(device)):
                torch.manual_seed(seed)
                nets = self.models(datas[0][0].shape[1], datas[0][1].shape[1])
                members.append({k: m.to(device) for k, m in nets.items()})
        self.n_parameters = sum(p.numel() for m in members[0].values() for p in m.parameters())
        bests = self.train_members(members, self.loss, datas, device, seeds)
        out = []
        for models, best in zip(members, bests):
            try:
                load_best(self.name, models, best)
                out.append((models, best))
            except MibenchError as exc:
                out.append(exc)
        return out

    def train_members(self, members: list[dict], loss, datas: list[tuple], device, seeds: list[int]) -> list[dict]:
        """``train`` for S members at once: ``members[i]`` (networks by key, built with ``seeds[i]``) on
        ``datas[i]``, stacked into one network per key (raises
        :class:`~mibench.estimators.members.Unstackable` before any step where they cannot be).  Each
        member draws its minibatches from its own generator seeded by its seed and is validated and kept on
        its own (its networks hold its slice of the stacked weights); one Adam updates the stacked weights;
        the draws inside the losses come from torch's global generator, seeded from ``seeds[0]``.  Returns
        one {key: :class:`Best`} per member."""
        import torch

        from mibench.critics.kernels import make_adam
        from mibench.estimators.members import stack_members

        s = self.settings
        m = len(members)
        kept = [{k: copy.deepcopy(net) for k, net in nets.items()} for nets in members] if s.ema > 0 else members
        folds = {k: stack_members([nets[k] for nets in members]) for k in members[0]}
        kept_folds = {k: stack_members([nets[k] for nets in kept]) for k in members[0]} if s.ema > 0 else folds
        n = datas[0][0].shape[0]
        xtr, ytr = torch.cat([d[0] for d in datas]), torch.cat([d[1] for d in datas])     # member-major rows
        offsets = torch.arange(m, device=device).unsqueeze(1) * n
        batch = min(s.batch_size, n)
        with torch.random.fork_rng(devices=cuda_devices(device)):
            torch.manual_seed(seeds[0] + 1)
            opt = make_adam([p for f in folds.values() for p in f.parameters()], lr=s.lr)     # as train()
            gens = [torch.Generator(device=device).manual_seed(seed) for seed in seeds]
            best = [{k: Best() for k in members[0]} for _ in members]
            curves = [{k: [] for k in members[0]} for _ in members]
            for step in range(1, s.steps + 1):
                idx = torch.stack([torch.randint(0, n, (batch,), generator=g, device=device) for g in gens])
                rows = (idx + offsets).reshape(-1)
                yb, xb = ytr[rows], xtr[rows]
                total = sum(loss(k, f, xb, yb).reshape(m, batch).mean(1) for k, f in folds.items()).sum()
                opt.zero_grad(set_to_none=True)
                total.backward()
                opt.step()
                if s.ema > 0:
                    _update_members_average(kept_folds, folds, kept, members, min(s.ema, (1 + step) / (10 + step)))
                if step % s.eval_every == 0 or step == s.steps:
                    _validate_members(kept, loss, datas, best, curves, step)
        return [{k: replace(b, curve=tuple(curves[i][k])) for k, b in member.items()} for i, member in enumerate(best)]


def _owner(cls: type, name: str) -> type | None:
    """The class of ``cls``'s method resolution order that defines ``name``."""
    return next((c for c in cls.__mro__ if name in vars(c)), None)


def _validate_members(kept: list[dict], loss, datas: list[tuple], best: list[dict], curves: list[dict],
                      step: int) -> None:
    """Each member's validation loss per network, on its own networks, added to its curve; a new best state
    is kept (copied)."""
    import torch

    with torch.no_grad():
        for i, (nets, data) in enumerate(zip(kept, datas)):
            for key, model in nets.items():
                v = float(loss(key, model, data[2], data[3]).mean())
                curves[i][key].append((step, v))
                if math.isfinite(v) and v < best[i][key].loss:
                    state = {k: t.detach().clone() for k, t in model.state_dict().items()}
                    best[i][key] = Best(v, state, step)


def _update_members_average(kept_folds: dict, folds: dict, kept: list, members: list, decay: float) -> None:
    """The moving average of the weights (``ema``) for stacked members: the stacked weights at once, each
    member's buffers on its own (a stacked network reads the first member's)."""
    import torch

    with torch.no_grad():
        for key, fold in folds.items():
            for avg, p in zip(kept_folds[key].parameters(), fold.parameters()):
                avg.mul_(decay).add_(p, alpha=1 - decay)
        for kept_nets, nets in zip(kept, members):
            for key, model in nets.items():
                for avg, b in zip(kept_nets[key].buffers(), model.buffers()):
                    avg.copy_(b)       # as trained.train's average: the buffers as they stand
