import pytest
import torch

from mibench.critics import kernels


@pytest.mark.skipif(not kernels.ONEDNN, reason="oneDNN linear not available in this torch build")
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("shape", [(4096, 256, 256), (64, 784, 256), (7, 3, 5)])
def test_onednn_linear_matches_aten(relu, shape):
    m, d_in, d_out = shape
    torch.manual_seed(0)
    x = torch.randn(m, d_in, requires_grad=True)
    w = torch.randn(d_out, d_in, requires_grad=True)
    b = torch.randn(d_out, requires_grad=True)
    out = kernels.linear(x, w, b, relu)
    ref = torch.nn.functional.linear(x, w, b)
    ref = torch.relu(ref) if relu else ref
    assert torch.allclose(out, ref, atol=1e-3, rtol=1e-4)
    g = torch.randn_like(out)
    got = torch.autograd.grad(out, (x, w, b), g)
    want = torch.autograd.grad(ref, (x, w, b), g)
    for a, e in zip(got, want):
        assert torch.allclose(a, e, atol=1e-2, rtol=1e-3), (a - e).abs().max()


def test_fallback_path_is_plain_linear(monkeypatch):
    monkeypatch.setattr(kernels, "ONEDNN", False)
    x, w = torch.randn(3, 4), torch.randn(2, 4)
    assert torch.equal(kernels.linear(x, w, None, relu=True), torch.relu(x @ w.T))
    assert kernels.kernel_name("cpu") == "aten"


def test_strided_operands_take_the_aten_path(monkeypatch):
    """A column slice of a weight is not a plain layout: it must not reach oneDNN (slow path)."""
    calls = []
    monkeypatch.setattr(kernels._OneDNNLinear, "apply", lambda *a: calls.append(a) or torch.zeros(()))
    w = torch.randn(8, 20)
    kernels.linear(torch.randn(3, 10), w[:, :10], None)
    assert not calls
    if kernels.ONEDNN:
        kernels.linear(torch.randn(3, 10), w[:, :10].contiguous(), None)
        kernels.linear(torch.randn(3, 8), w[:, :8].t().contiguous().t(), None)
        assert len(calls) == 2


@pytest.mark.parametrize("relu", [False, True])
def test_non_finite_inputs_stay_non_finite(relu):
    """NaN must propagate like aten (oneDNN's fused ReLU post-op would turn it into 0 and hide a
    diverged critic)."""
    x = torch.tensor([[float("nan"), 1.0], [float("inf"), 1.0], [1.0, 2.0]])
    w, b = torch.ones(3, 2), torch.zeros(3)
    out = kernels.linear(x, w, b, relu)
    ref = torch.nn.functional.linear(x, w, b)
    ref = torch.relu(ref) if relu else ref
    assert torch.equal(out.isnan(), ref.isnan()) and torch.equal(out.isinf(), ref.isinf())


@pytest.mark.skipif(not kernels.ONEDNN, reason="oneDNN linear not available in this torch build")
@pytest.mark.parametrize("strided", [False, True])
def test_grad_weight_routes_match_aten(monkeypatch, strided):
    monkeypatch.setattr(kernels, "_STRIDED_MM", strided)
    torch.manual_seed(1)
    g, x = torch.randn(4096, 256), torch.randn(4096, 256)
    ref = (g.double().t() @ x.double()).float()
    assert torch.allclose(kernels._grad_weight(g, x), ref, atol=1e-3, rtol=1e-4)


def test_strided_route_restores_the_precision_flag():
    before = torch.backends.mkldnn.matmul.fp32_precision
    with pytest.raises(RuntimeError):
        kernels._mm_via_onednn(torch.ones(2, 3), torch.ones(2, 3))   # shape mismatch
    assert torch.backends.mkldnn.matmul.fp32_precision == before


def test_strided_route_refused_when_it_is_not_fp32(monkeypatch):
    """On CPUs where oneDNN really computes fp32 matmuls in bf16 (AMX), the probe must say no."""
    monkeypatch.setattr(kernels, "_STRIDED_MM", None)
    monkeypatch.setattr(kernels, "_mm_via_onednn", lambda a, b: a.bfloat16().float() @ b.bfloat16().float())
    assert kernels.strided_mm_is_fp32() is False
    monkeypatch.setattr(kernels, "_STRIDED_MM", None)
    monkeypatch.setattr(kernels, "_mm_via_onednn", lambda a, b: a @ b)
    assert kernels.strided_mm_is_fp32() is True
