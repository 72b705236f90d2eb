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


def _layer_by_layer(hx, hy, layers):
    """The joint critic's pairs as the graph of one kernels.linear per layer (the reference numbers)."""
    h = (hx + hy).relu_()
    shape = h.shape
    h = h.reshape(-1, shape[-1])
    for i, (w, b) in enumerate(layers):
        h = kernels.linear(h, w, b, relu=i < len(layers) - 1)
    return h.reshape(*shape[:-1], h.shape[-1])


def _pair_inputs(seed, shape_x, shape_y, widths):
    gen = torch.Generator().manual_seed(seed)
    hx = torch.randn(*shape_x, generator=gen, requires_grad=True)
    hy = torch.randn(*shape_y, generator=gen, requires_grad=True)
    layers = [(torch.randn(o, i, generator=gen).div_(i ** 0.5).requires_grad_(),
               torch.randn(o, generator=gen).mul_(0.1).requires_grad_()) for i, o in zip(widths, widths[1:])]
    return hx, hy, layers


@pytest.mark.skipif(not kernels.ONEDNN, reason="oneDNN linear not available in this torch build")
@pytest.mark.parametrize("shapes, widths", [
    (((16, 1, 32), (1, 16, 32)), (32, 32, 32, 1)),          # a joint critic's forward, 2 hidden layers
    (((3, 8, 1, 24), (3, 1, 8, 24)), (24, 24, 1)),          # block_scores: G blocks of B x B pairs
    (((12, 1, 16), (1, 12, 16)), (16, 1)),                  # no hidden layer after the first
    (((10, 1, 16), (1, 10, 16)), (16, 16, 3)),              # several outputs (the output GEMM's backward)
])
def test_pair_mlp_is_the_layer_by_layer_graph_bit_for_bit(shapes, widths):
    """The fused node computes the same operations in the same order: scores and every gradient equal."""
    fused_in, ref_in = _pair_inputs(0, *shapes, widths), _pair_inputs(0, *shapes, widths)
    out = kernels.pair_mlp(fused_in[0], fused_in[1], fused_in[2])
    ref = _layer_by_layer(ref_in[0], ref_in[1], ref_in[2])
    assert out.shape == ref.shape and torch.equal(out, ref)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    leaves = lambda t: [t[0], t[1], *[p for layer in t[2] for p in layer]]   # noqa: E731
    got = torch.autograd.grad(out, leaves(fused_in), g)
    want = torch.autograd.grad(ref, leaves(ref_in), g)
    for a, e in zip(got, want):
        assert torch.equal(a, e)


def test_pair_mlp_off_onednn_is_plain_torch(monkeypatch):
    """With MIBENCH_KERNELS=aten (or without oneDNN) the same function through F.linear."""
    hx, hy, layers = _pair_inputs(2, (8, 1, 16), (1, 8, 16), (16, 16, 1))
    fast = kernels.pair_mlp(hx, hy, layers)
    monkeypatch.setattr(kernels, "ONEDNN", False)
    plain = kernels.pair_mlp(hx, hy, layers)
    assert torch.allclose(fast, plain, atol=1e-5, rtol=1e-5)
    g, leaves = torch.ones_like(plain), [hx, hy, layers[0][0]]
    for a, e in zip(torch.autograd.grad(fast, leaves, g), torch.autograd.grad(plain, leaves, g)):
        assert torch.allclose(a, e, atol=1e-4, rtol=1e-4)


def test_pair_mlp_keeps_a_diverged_critic_non_finite():
    """A NaN weight reaches the scores (as with one linear + ReLU per layer), so divergence is seen."""
    hx, hy, layers = _pair_inputs(3, (6, 1, 8), (1, 6, 8), (8, 8, 1))
    with torch.no_grad():
        layers[0][0][2, 3] = float("nan")
    assert kernels.pair_mlp(hx, hy, layers).isnan().all()


def _member_inputs(shape, bias=True, seed=2):
    s, rows, d_in, d_out = shape
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(s, rows, d_in, generator=gen, requires_grad=True)
    w = torch.randn(s, d_out, d_in, generator=gen).div_(d_in ** 0.5).requires_grad_()
    b = torch.randn(s, d_out, generator=gen).requires_grad_() if bias else None
    return x, w, b


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(3, 256, 256, 256), (2, 64, 64, 32), (3, 50, 10, 128), (1, 7, 128, 1),
                                   (2, 9, 16, 8)])
def test_member_linear_is_each_members_linear(shape, bias):
    """Values and all three gradients of member m are F.linear's with member m's weight, on the oneDNN
    route (kernels.member_layer_on_onednn) and on baddbmm's (the last, narrow shape) alike."""
    x, w, b = _member_inputs(shape, bias)
    out = kernels.member_linear(x, w, b)
    ref = torch.stack([torch.nn.functional.linear(x[m], w[m], None if b is None else b[m]) for m in range(shape[0])])
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    g = torch.randn_like(out)
    inputs = (x, w) if b is None else (x, w, b)
    for got, want in zip(torch.autograd.grad(out, inputs, g), torch.autograd.grad(ref, inputs, g)):
        torch.testing.assert_close(got, want, atol=1e-3, rtol=1e-4)


def test_member_linear_takes_onednn_only_where_it_is_faster(monkeypatch):
    """The oneDNN route for wide layers where the strided route is fp32; baddbmm for narrow layers and
    where the probe refuses the route (the same numbers either way: the test above)."""
    calls = []
    monkeypatch.setattr(kernels._MemberLinear, "apply", lambda *a: calls.append(a) or a[0])
    kernels.member_linear(*_member_inputs((2, 4, 10, 32)))
    kernels.member_linear(*_member_inputs((2, 4, 32, 32)))
    assert not calls
    kernels.member_linear(*_member_inputs((2, 4, 10, 128)))
    kernels.member_linear(*_member_inputs((2, 4, 128, 1)))
    assert len(calls) == (2 if kernels.ONEDNN and kernels.strided_mm_is_fp32() else 0)
    monkeypatch.setattr(kernels, "_STRIDED_MM", False)
    kernels.member_linear(*_member_inputs((2, 4, 64, 64)))
    assert len(calls) <= 2


def test_member_linear_with_an_expanded_gradient():
    """A stride-0 gradient (e.g. from a sum) reaches the oneDNN route as a plain tensor."""
    x, w, b = _member_inputs((2, 16, 64, 64))
    out = kernels.member_linear(x, w, b)
    gx, = torch.autograd.grad(out.sum(), (x,))
    torch.testing.assert_close(gx, w.detach().sum(1, keepdim=True).expand(2, 16, 64), atol=1e-4, rtol=1e-4)
