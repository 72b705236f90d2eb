"""Fast kernels for the critics' hot path.

On x86 CPUs PyTorch sends fp32 ``mm``/``linear`` to MKL, which on AMD processors takes a slower
code path (about 185 GFLOP/s on this project's 2-core EPYC) while oneDNN's kernels reach about
390 GFLOP/s.  :func:`linear` routes the forward GEMM (with fused bias) and both backward GEMMs
of a linear(+ReLU) layer through oneDNN on CPU fp32 tensors; everywhere else (CUDA, other
dtypes, builds without oneDNN, or ``MIBENCH_KERNELS=aten``) it is plain ``F.linear``.  Both paths
compute the same function; ``tests/test_kernels.py`` checks values and gradients against aten.
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
            grad_w = _dnn(grad.t(), x.t(), None, "none")           # grad^T @ x
        if ctx.needs_input_grad[2]:
            grad_b = grad.sum(0)
        return grad_x, grad_w, grad_b, None


def _plain(t: torch.Tensor) -> bool:
    """Row- or column-major 2-D: oneDNN's fast layouts.  Other strides (e.g. a column slice of a
    weight, as the joint critic's split first layer uses) hit a reference path ~100x slower."""
    return t.is_contiguous() or t.t().is_contiguous()


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, relu: bool = False) -> torch.Tensor:
    """``relu?(x @ weight.T + bias)`` for 2-D ``x``, through oneDNN on CPU fp32 when available."""
    if (ONEDNN and x.device.type == "cpu" and x.dtype == torch.float32 and weight.dtype == torch.float32
            and x.dim() == 2 and _plain(x) and _plain(weight)):
        return _OneDNNLinear.apply(x, weight, bias, relu)
    out = F.linear(x, weight, bias)
    return torch.relu(out) if relu else out
