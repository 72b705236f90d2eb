"""Fast kernels for the critics' hot path.

On x86 CPUs PyTorch sends fp32 ``mm``/``linear`` to MKL, which on AMD processors takes a slower
code path (about 185 GFLOP/s on this project's 2-core EPYC) while oneDNN's kernels reach about
390 GFLOP/s.  :func:`linear` routes the forward GEMM (with fused bias) and both backward GEMMs
of a linear(+ReLU) layer through oneDNN on CPU fp32 tensors; everywhere else (CUDA, other
dtypes, builds without oneDNN, or ``MIBENCH_KERNELS=aten``) it is plain ``F.linear``.  Both paths
compute the same function; ``tests/critics/test_kernels.py`` checks values and gradients against aten.
"""
from __future__ import annotations

import os

import torch
import torch.nn.functional as F


def _onednn_available() -> bool:
    if os.environ.get("MIBENCH_KERNELS", "auto").lower() == "aten":
        return False
    if not torch.backends.mkldnn.is_available():
        return False
    try:
        op = torch.ops.mkldnn._linear_pointwise
        a = torch.ones(2, 3)
        return bool(torch.allclose(op(a, torch.ones(4, 3), None, "none", [], ""), torch.full((2, 4), 3.0)))
    except (AttributeError, RuntimeError):
        return False


ONEDNN = _onednn_available()


def kernel_name(device) -> str:
    return "onednn" if ONEDNN and torch.device(device).type == "cpu" else "aten"


def _dnn(x, w, b, act: str):
    # oneDNN matmul: x (M, in) @ w (out, in)^T + b, with an optional fused ReLU; strided operands ok
    return torch.ops.mkldnn._linear_pointwise(x, w, b, act, [], "")


class _OneDNNLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, relu: bool):
        out = _dnn(x, weight, bias, "none")
        if relu:
            # not oneDNN's fused ReLU post-op: it maps NaN to 0, which would hide a diverged critic
            out = out.relu_()
        ctx.relu = relu
        ctx.save_for_backward(x, weight, out if relu else None)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, weight, out = ctx.saved_tensors
        if ctx.relu:
            # one fused pass (a comparison + masked_fill costs ~30% of a training step more)
            grad = torch.ops.aten.threshold_backward(grad, out, 0.0)
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = _dnn(grad, weight.t(), None, "none")          # grad @ W
        if ctx.needs_input_grad[1]:
            grad_w = _grad_weight(grad, x)                         # grad^T @ x
        if ctx.needs_input_grad[2]:
            grad_b = grad.sum(0)
        return grad_x, grad_w, grad_b, None


_STRIDED_MM: bool | None = None


def strided_mm_is_fp32() -> bool:
    """Whether aten's oneDNN matmul route (taken when ``mkldnn.matmul.fp32_precision`` allows
    bf16) computes in full fp32 on this CPU.  That route reads transposed operands in place, while
    ``_linear_pointwise`` first copies them, which costs time every step.  oneDNN only down-converts
    where it has bf16 matmul kernels for fp32 data (AMX); this probe checks the actual numerics at the
    critic's shape and at a batched (members') one, whose error is far smaller in fp32 than for bf16
    inputs, and the route is used only if they are fp32's (what the route buys: benchmarks/README.md, "Performance").
    ``MIBENCH_KERNELS=onednn-copy`` disables it."""
    global _STRIDED_MM
    if _STRIDED_MM is None:
        _STRIDED_MM = False
        if os.environ.get("MIBENCH_KERNELS", "auto").lower() == "auto":
            try:
                gen = torch.Generator().manual_seed(0)
                g, x = torch.randn(4096, 256, generator=gen), torch.randn(4096, 256, generator=gen)
                out = _mm_via_onednn(g.t(), x).double()
                ref = g.double().t() @ x.double()
                gs, xs = g[:1536].view(3, 512, 256), x[:1536].view(3, 512, 256)     # the batched (member) route
                out3 = _mm_via_onednn(gs.transpose(1, 2), xs).double()
                ref3 = gs.double().transpose(1, 2) @ xs.double()
                _STRIDED_MM = bool((out - ref).abs().max() < 1e-2) and bool((out3 - ref3).abs().max() < 1e-2)
            except (AttributeError, RuntimeError):
                _STRIDED_MM = False
    return _STRIDED_MM


def _mm_via_onednn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    prec = torch.backends.mkldnn.matmul
    old = prec.fp32_precision
    prec.fp32_precision = "bf16"
    try:
        # mm / bmm themselves: ``a @ b`` reaches the same kernel through a few more operations per call
        return torch.mm(a, b) if a.dim() == 2 else torch.bmm(a, b)
    finally:
        prec.fp32_precision = old


class _MemberLinear(torch.autograd.Function):
    """:func:`member_linear` through oneDNN's batched matmul, forward and both backward products."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        out = _mm_via_onednn(x, weight.transpose(1, 2))
        if bias is not None:
            out.add_(bias.unsqueeze(1))
        ctx.has_bias = bias is not None
        ctx.save_for_backward(x, weight)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        grad = grad.contiguous()    # e.g. an expanded gradient (stride 0); a no-op on a contiguous one
        grad_x = _mm_via_onednn(grad, weight) if ctx.needs_input_grad[0] else None
        grad_w = _mm_via_onednn(grad.transpose(1, 2), x) if ctx.needs_input_grad[1] else None
        grad_b = grad.sum(1) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_x, grad_w, grad_b


#: a member layer with a side at least this wide goes through oneDNN (:func:`member_layer_on_onednn`)
MEMBER_ONEDNN_MIN_SIDE = 64


def member_layer_on_onednn(d_in: int, d_out: int) -> bool:
    """Whether a member layer ``d_in -> d_out`` trains (forward and backward) faster through oneDNN's
    batched matmul than through aten's: where one of its sides is at least :data:`MEMBER_ONEDNN_MIN_SIDE`
    wide (docs/estimators.md, "Members of a cell")."""
    return max(d_in, d_out) >= MEMBER_ONEDNN_MIN_SIDE


def member_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x @ weight^T + bias`` for S members at once: ``x`` (S, R, in), ``weight`` (S, out, in), ``bias``
    (S, out) or None -> (S, R, out).  On CPU fp32, where :func:`strided_mm_is_fp32` and the layer is
    wide enough (:func:`member_layer_on_onednn`), through oneDNN's batched matmul (about twice
    aten's rate at these shapes; benchmarks/README.md, "Performance"); elsewhere ``torch.baddbmm``.
    Both compute the same function and round differently in the last bits."""
    if (_onednn_fp32(x) and weight.dtype == torch.float32 and member_layer_on_onednn(weight.shape[2], weight.shape[1])
            and (bias is None or bias.dtype == torch.float32) and strided_mm_is_fp32()):
        return _MemberLinear.apply(x, weight, bias)
    if bias is None:
        return torch.bmm(x, weight.transpose(1, 2))
    return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))


def _grad_weight(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    if strided_mm_is_fp32():
        return _mm_via_onednn(grad.t(), x)
    return _dnn(grad.t(), x.t(), None, "none")


def _plain(t: torch.Tensor) -> bool:
    """Row- or column-major 2-D: oneDNN's fast layouts.  Other strides (e.g. a column slice of a
    weight, as the joint critic's split first layer uses) hit a reference path ~100x slower."""
    return t.is_contiguous() or t.t().is_contiguous()


def _onednn_fp32(t: torch.Tensor) -> bool:
    return ONEDNN and t.device.type == "cpu" and t.dtype == torch.float32 and not torch.is_autocast_enabled("cpu")


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, relu: bool = False) -> torch.Tensor:
    """``relu?(x @ weight.T + bias)`` for 2-D ``x``, through oneDNN on CPU fp32 when available.  Under
    ``torch.autocast`` (``--precision bf16``) it is ``F.linear``, which autocast runs in bf16 (also
    through oneDNN on CPU)."""
    if (_onednn_fp32(x) and weight.dtype == torch.float32 and x.dim() == 2 and _plain(x) and _plain(weight)):
        return _OneDNNLinear.apply(x, weight, bias, relu)
    out = F.linear(x, weight, bias)
    return torch.relu(out) if relu else out


class _PairMLP(torch.autograd.Function):
    """:func:`pair_mlp` on the oneDNN path, with its backward written out: the same operations in the
    same order as autograd runs them through :class:`_OneDNNLinear` (so the same numbers, bit for
    bit), without autograd's per-operation bookkeeping, with each ReLU's backward written into the
    incoming gradient's buffer instead of a fresh one, and the output layer's input gradient for a
    single output as a broadcast product instead of a GEMM with an inner dimension of one."""

    @staticmethod
    def forward(ctx, hx, hy, *params):
        n = len(params) // 2
        h = torch.add(hx, hy).relu_()
        shape = h.shape
        h = h.view(-1, shape[-1])
        acts = [h]
        for i in range(n):
            h = _dnn(h, params[2 * i], params[2 * i + 1], "none")
            if i < n - 1:
                h = h.relu_()
                acts.append(h)
        ctx.save_for_backward(*acts, *params)
        ctx.shapes = hx.shape, hy.shape, shape
        return h.view(*shape[:-1], h.shape[-1])

    @staticmethod
    def backward(ctx, grad):
        saved = ctx.saved_tensors
        n = len(saved) // 3
        acts, params = saved[:n], saved[n:]
        hx_shape, hy_shape, shape = ctx.shapes
        g = grad.reshape(-1, grad.shape[-1])
        grads = [None] * (2 * n)
        for i in range(n - 1, -1, -1):
            weight, h = params[2 * i], acts[i]
            if ctx.needs_input_grad[2 + 2 * i]:
                grads[2 * i] = _grad_weight(g, h)
            if params[2 * i + 1] is not None and ctx.needs_input_grad[3 + 2 * i]:
                grads[2 * i + 1] = g.sum(0)
            # the input gradient g @ W: for one output an outer product (what the GEMM computes,
            # each element one rounded product, read off a broadcast multiply)
            g = g * weight if weight.shape[0] == 1 else _dnn(g, weight.t(), None, "none")
            g = torch.ops.aten.threshold_backward.grad_input(g, h, 0.0, grad_input=g)
        g = g.view(shape)
        grad_hx = g.sum_to_size(hx_shape) if ctx.needs_input_grad[0] else None
        grad_hy = g.sum_to_size(hy_shape) if ctx.needs_input_grad[1] else None
        return grad_hx, grad_hy, *grads


def pair_mlp(hx: torch.Tensor, hy: torch.Tensor, layers) -> torch.Tensor:
    """The joint critic past its split first layer: ``relu(hx + hy)`` (``hx`` and ``hy`` broadcast to
    every pair, e.g. (K, 1, h) and (1, K, h)), then ``layers`` -- (weight, bias) pairs, each followed
    by a ReLU except the last -- on every pair.  Returns (..., out) over the broadcast shape.

    On CPU fp32 with oneDNN this is one autograd node with a hand-written backward
    (:class:`_PairMLP`, same numbers as the layer-by-layer graph); elsewhere (CUDA, autocast, other
    dtypes, ``MIBENCH_KERNELS=aten``) plain torch operations."""
    params = [t for layer in layers for t in layer]
    if (_onednn_fp32(hx) and _onednn_fp32(hy) and max(hx.dim(), hy.dim()) >= 2
            and all(w.dtype == torch.float32 and w.dim() == 2 and _plain(w) for w, _ in layers)
            and all(b is None or (b.dtype == torch.float32 and b.is_contiguous()) for _, b in layers)):
        return _PairMLP.apply(hx, hy, *params)
    h = (hx + hy).relu_()
    shape = h.shape
    h = h.reshape(-1, shape[-1])
    for i, (weight, bias) in enumerate(layers):
        h = linear(h, weight, bias, relu=i < len(layers) - 1)
    return h.reshape(*shape[:-1], h.shape[-1])


# The allocator setting lives in mibench.utils.allocator (no torch import: the CLI applies it before any
# heavy import); re-exported here for the benchmarks that call kernels.tune_cpu_allocator().
from mibench.utils.allocator import allocator_setting, tune_cpu_allocator  # noqa: E402,F401


def make_adam(params, lr: float) -> torch.optim.Optimizer:
    """Adam with the fused (single-kernel) update where this torch build has one for these
    tensors: the same update rule in a fraction of the per-parameter loop's time on CPU
    (benchmarks/README.md, "Performance")."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, ValueError, TypeError):
        return torch.optim.Adam(params, lr=lr)
