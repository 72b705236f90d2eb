"""Members: S copies of one network (the same architecture, each with its own weights) trained as one
stacked network, so that a benchmark cell's seeds cost one training loop instead of S.

On the small inputs of a benchmark cell (BMI's 5 x 5 tasks, n = 5,000, batches of 256) a training step
of a trained sample estimator is dominated by the per-operation overhead of its many small tensor
operations, not by their arithmetic; S members stacked into every operation share that overhead.

The stacked network (:func:`stack_members`) runs the members' rows folded into one batch, member-major
(rows ``m * B ... (m + 1) * B - 1`` belong to member m).  Every ``nn.Linear`` becomes a
:class:`MemberLinear`, one batched matrix product with a weight per member; every other operation of
these networks acts row by row and runs unchanged on the folded rows.  The few operations that mix rows
(a cyclic shift of the pairs, a permutation of them) take the number of members from the network
(:func:`members_of`) and stay within each member's rows (:func:`member_roll`, :func:`member_randperm`);
with one member they are the plain operations.

Each member keeps its own module (built with its own seed, so its initialisation is its separate run's):
stacking replaces that module's parameters by views of the stacked ones, so the member module always
holds the member's current weights and can be validated, saved and read out exactly as a separate run's
module.  A module with parameters of its own (not in a linear layer) names them in
``member_parameters`` and reads them with a leading member dimension when stacked (the flows' free
vectors, :class:`~mibench.estimators.generative.flows._Params`); a network with any other parameter, or
with buffers that differ between members, cannot be stacked (:class:`Unstackable`).
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from mibench.critics.kernels import member_linear


class Unstackable(Exception):
    """The members' networks cannot run as one stacked network (the caller trains them one at a time)."""


def members_of(model) -> int:
    """The members a (stacked) network runs at once; 1 for an ordinary network."""
    return int(getattr(model, "members", 1))


def member_roll(t: torch.Tensor, shift: int, members: int) -> torch.Tensor:
    """``torch.roll(t, shift, 0)`` within each member's rows of the folded ``t``."""
    if members == 1:
        return torch.roll(t, shift, 0)
    return torch.roll(t.reshape(members, -1, *t.shape[1:]), shift, 1).reshape(t.shape)


def member_randperm(n: int, members: int, generator=None, device=None) -> torch.Tensor:
    """``torch.randperm(n)`` within each member's ``n // members`` rows of a folded batch (row indices)."""
    if members == 1:
        return torch.randperm(n, generator=generator, device=device)
    rows = n // members
    keys = torch.rand(members, rows, generator=generator, device=device)
    offsets = torch.arange(members, device=device).unsqueeze(1) * rows
    return (torch.argsort(keys, dim=1) + offsets).reshape(-1)


def stacked_parameter(parts: list[nn.Module], name: str) -> nn.Parameter:
    """One parameter (members, *shape) from parameter ``name`` of each module of ``parts``; each part's
    parameter becomes a view of its member's slice (module docstring)."""
    stack = nn.Parameter(torch.stack([getattr(p, name).detach() for p in parts]))
    for i, part in enumerate(parts):
        part._parameters[name] = nn.Parameter(stack.detach()[i], requires_grad=getattr(part, name).requires_grad)
    return stack


class MemberLinear(nn.Module):
    """S linear layers as one: the rows of member m (member-major folded rows) through member m's weight
    (``weight`` (S, out, in), ``bias`` (S, out)); a zuko ``MaskedLinear``'s mask applies to every member."""

    def __init__(self, parts: list[nn.Linear]):
        super().__init__()
        self.members = len(parts)
        self.weight = stacked_parameter(parts, "weight")
        self.bias = stacked_parameter(parts, "bias") if parts[0].bias is not None else None
        mask = getattr(parts[0], "mask", None)
        self.register_buffer("mask", mask)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight if self.mask is None else self.mask * self.weight
        out = member_linear(x.reshape(self.members, -1, x.shape[-1]), w, self.bias)
        return out.reshape(*x.shape[:-1], w.shape[1])


def stack_members(parts: list[nn.Module]) -> nn.Module:
    """The stacked network of ``parts`` (module docstring); raises :class:`Unstackable`, before any part is
    changed, where they cannot be stacked."""
    _check(parts)
    return _stack(parts)


def _check(parts: list[nn.Module]) -> None:
    """Raise :class:`Unstackable` where ``parts`` (and their children) cannot run as one network."""
    first = parts[0]
    if any(type(p) is not type(first) for p in parts):
        raise Unstackable(f"members of different types: {type(first).__name__}")
    for name, buf in first._buffers.items():
        for p in parts[1:]:
            other = p._buffers.get(name)
            if (buf is None) != (other is None) or (buf is not None and not torch.equal(buf, other)):
                raise Unstackable(f"{type(first).__name__}'s buffer {name!r} differs between members")
    if isinstance(first, nn.Linear):
        if any(p._forward_hooks or p._forward_pre_hooks for p in parts):
            raise Unstackable("a linear layer with hooks")
        if type(first).forward is not nn.Linear.forward and not _zuko_masked(first):
            raise Unstackable(f"{type(first).__name__} computes more than a linear map")
        return
    free = getattr(first, "member_parameters", ())
    own = [n for n, p in first._parameters.items() if p is not None and n not in free]
    if own:
        raise Unstackable(f"{type(first).__name__} holds parameters outside linear layers ({own[0]})")
    for name, child in first._modules.items():
        if child is not None:
            _check([p._modules[name] for p in parts])


def _stack(parts: list[nn.Module]) -> nn.Module:
    first = parts[0]
    if isinstance(first, nn.Linear):
        return MemberLinear(parts)
    stacked = copy.copy(first)
    stacked._parameters = {n: stacked_parameter(parts, n) for n, p in first._parameters.items() if p is not None}
    stacked._buffers = dict(first._buffers)
    stacked._non_persistent_buffers_set = set(first._non_persistent_buffers_set)
    stacked._modules = {name: None if child is None else _stack([p._modules[name] for p in parts])
                        for name, child in first._modules.items()}
    stacked.members = len(parts)
    return stacked


def _zuko_masked(layer: nn.Linear) -> bool:
    """Whether ``layer`` is zuko's ``MaskedLinear`` (``F.linear(x, mask * weight, bias)``, which
    :class:`MemberLinear` computes); zuko is not imported for the check."""
    cls = type(layer)
    return cls.__name__ == "MaskedLinear" and cls.__module__.startswith("zuko.") and "mask" in layer._buffers
