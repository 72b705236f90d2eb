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
    critic's shape, whose error is far smaller in fp32 than for bf16 inputs, and the route is used only
    if they are fp32's (what the route buys: benchmarks/README.md, "Performance").
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
                _STRIDED_MM = bool((out - ref).abs().max() < 1e-2)
            except (AttributeError, RuntimeError):
                _STRIDED_MM = False
    return _STRIDED_MM


def _mm_via_onednn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    prec = torch.backends.mkldnn.matmul
    old = prec.fp32_precision
    prec.fp32_precision = "bf16"
    try:
        return a @ b
    finally:
        prec.fp32_precision = old


def _grad_weight(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    if strided_mm_is_fp32():
        return _mm_via_onednn(grad.t(), x)
    return _dnn(grad.t(), x.t(), None, "none")


def _plain(t: torch.Tensor) -> bool:
    """Row- or column-major 2-D: oneDNN's fast layouts.  Other strides (e.g. a column slice of a
    weight, as the joint critic's split first layer uses) hit a reference path ~100x slower."""
    return t.is_contiguous() or t.t().is_contiguous()


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, relu: bool = False) -> torch.Tensor:
    """``relu?(x @ weight.T + bias)`` for 2-D ``x``, through oneDNN on CPU fp32 when available.  Under
    ``torch.autocast`` (``--precision bf16``) it is ``F.linear``, which autocast runs in bf16 (also
    through oneDNN on CPU)."""
    if (ONEDNN and x.device.type == "cpu" and x.dtype == torch.float32 and weight.dtype == torch.float32
            and x.dim() == 2 and _plain(x) and _plain(weight) and not torch.is_autocast_enabled("cpu")):
        return _OneDNNLinear.apply(x, weight, bias, relu)
    out = F.linear(x, weight, bias)
    return torch.relu(out) if relu else out


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
