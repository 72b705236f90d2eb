"""Batched members (mibench/estimators/trained_members.py, members.py): the seeds of a cell trained as one
stacked network give the estimates of separate runs.

* estimators without random draws in their losses (doe-flow, ba, gm-flow, club, l1out, flo): each
  member's value is its separate run's to float32 rounding (the stacked matrix products may round
  differently in the last bit, a difference that grows over the steps: at most 7e-8 nats after these 30
  steps, 2e-5 after 50 steps of the default doe-flow at n = 5,000; ``TOL_DETERMINISTIC``);
* minde-c and fmmi-c draw diffusion times / noise and flow-matching partners inside their losses, from
  one generator for all members, so a member draws other numbers than its separate run.  The tolerance
  comes from the spread of the separate runs over seeds, measured in the test on the same data (sd):
  each member within ``SPREAD_FACTOR`` sd of its separate run, the members' mean within
  ``SPREAD_FACTOR`` / sqrt(seeds) sd of the separate runs' mean.  A member and its separate run share
  data, split, initialisation and minibatches, so they differ by less than two independent seeds do
  (sd sqrt(2) at most): 4.5 sd is over 3 of those; measured: at most 1.1 sd (minde-c), 0.8 (fmmi-c);
* one member is exactly the unbatched path; a member whose validation loss stops improving keeps its
  best state while the others train on; a member's bad data is its own error; and the sample protocol
  records a batched cell's rows as it records separate runs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
from torch import nn

from mibench.errors import MibenchError
from mibench.estimators import ESTIMATORS
from mibench.estimators.generative.family import BarberAgakovFlow, ZukoFlowSettings
from mibench.estimators.members import Unstackable, member_randperm, member_roll, stack_members
from mibench.estimators.trained import HeldOutEstimator, TrainedSettings

#: float32 rounding of the stacked products, grown over 30 steps (nats; module docstring)
TOL_DETERMINISTIC = 1e-5
#: random-draw estimators: tolerance in standard deviations of the separate runs over seeds (module docstring)
SPREAD_FACTOR = 4.5
SMALL = {"steps": 30, "eval_every": 10, "batch_size": 64, "device": "cpu"}
#: enough steps for minde-c and fmmi-c to read most of the 0.45 nats (30 steps read ~0)
RANDOM_DRAWS = {"steps": 200, "eval_every": 25}
NETS = {"doe-flow": {"hidden": 16, "context": 8, "layers": 2}, "ba": {"hidden": 16, "layers": 2},
        "gm-flow": {"hidden": 16, "layers": 2}, "club": {"hidden": 64},
        "l1out": {"hidden": 16, "layers": 2, "block": 32},
        "flo": {"hidden": 16, "negatives": 4, "test_negatives": 8}, "minde-c": {"hidden": 32, "readout_times": 8},
        "fmmi-c": {"hidden": 32, "readout_passes": 2}}


def _data(seeds, n=400, rho=0.6, dim=2):
    out = []
    for seed in seeds:
        rng = np.random.default_rng(100 + seed)
        x = rng.standard_normal((n, dim))
        out.append((x, rho * x + np.sqrt(1 - rho ** 2) * rng.standard_normal((n, dim))))
    return out


def _estimator(name):
    return ESTIMATORS.get(name).obj().with_settings(**SMALL, **NETS[name])


@pytest.mark.parametrize("name", ["doe-flow", "ba", "gm-flow", "club", "l1out", "flo"])
def test_stacked_members_are_their_separate_runs(name):
    est = _estimator(name)
    seeds = [0, 1, 2]
    data = _data(seeds)
    members = est.estimate_members(data, seeds, stacked=True)
    assert all(m.batched and m.error is None for m in members)
    for (x, y), seed, member in zip(data, seeds, members):
        value = est.estimate(x, y, seed=seed)
        assert abs(member.value - value) < TOL_DETERMINISTIC, (name, seed, member.value, value)
        assert member.last["n_test"] == est.last["n_test"] and member.last["n_train"] == est.last["n_train"]
        assert {k: v for k, v in member.last.items() if k.startswith("best_step")} == \
            {k: v for k, v in est.last.items() if k.startswith("best_step")}
        assert set(member.last) == set(est.last)
        assert member.status == str(getattr(est, "status", "") or "")    # its own status, where the estimator sets one
        assert member.seconds > 0


@pytest.mark.parametrize("name", ["minde-c", "fmmi-c"])
def test_random_draw_members_have_the_spread_of_separate_runs(name):
    est = _estimator(name).with_settings(**RANDOM_DRAWS)
    seeds = [0, 1, 2, 3]
    data = _data(seeds)
    separate = np.array([est.estimate(x, y, seed=s) for (x, y), s in zip(data, seeds)])
    members = est.estimate_members(data, seeds, stacked=True)
    assert all(m.batched and m.error is None for m in members)
    batched = np.array([m.value for m in members])
    tol = SPREAD_FACTOR * separate.std(ddof=1)
    assert np.abs(batched - separate).max() < tol, (batched, separate)
    assert abs(batched.mean() - separate.mean()) < tol / np.sqrt(len(seeds))
    assert not np.array_equal(batched, separate)      # the draws do differ: this is not the deterministic case


def test_one_member_is_exactly_the_unbatched_path():
    est = _estimator("minde-c")
    (x, y), = _data([5])
    member, = est.estimate_members([(x, y)], [5], stacked=True)
    assert not member.batched
    assert member.value == est.estimate(x, y, seed=5)
    assert member.last == est.last
    assert est.estimate_many([(x, y)], [5]) == [est.estimate(x, y, seed=5)]


def test_where_batching_is_the_default():
    """Every estimator that trains by the base's procedure stacks its members on a CPU (each measured
    faster so: benchmarks/results/batched_seeds.txt); the others train them one at a time."""
    for name in ("ba", "flo", "minde-c", "fmmi-c"):
        assert _estimator(name).batches_members() and _estimator(name).stacks_members(), name
    assert not ESTIMATORS.get("mienf").obj().stacks_members()         # its own prepare(): one at a time
    assert not ESTIMATORS.get("hybrid-resampled").obj().stacks_members()   # a composition: one at a time
    assert not ESTIMATORS.get("mienf").obj().batches_members()
    data = _data([0, 1])
    assert all(m.batched for m in _estimator("minde-c").estimate_members(data, [0, 1]))
    assert all(m.batched for m in _estimator("ba").estimate_members(data, [0, 1]))
    assert not any(m.batched for m in _estimator("minde-c").estimate_members(data, [0, 1], stacked=False))


class _Line(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(1, 1)

    def log_prob(self, y, x):
        return -((y - self.lin(x)) ** 2).sum(1)


@dataclass(frozen=True)
class _LineSettings(TrainedSettings):
    steps: int = 60
    eval_every: int = 5
    batch_size: int = 32
    lr: float = 0.05
    device: str = "cpu"


class _LineFit(HeldOutEstimator):
    """y ~ a x + b by least squares: no random draws, one tiny network."""

    name = "line-test"
    Settings = _LineSettings
    batch_members_on = ("cpu",)

    def models(self, dx, dy):
        return {"line": _Line()}

    def loss(self, key, model, x, y):
        return -model.log_prob(y, x)

    def readout(self, models, x, y):
        return float(self.loss("line", models["line"], x, y).double().mean()), {}


def test_a_member_whose_validation_worsens_keeps_its_best_state_while_the_others_train_on():
    est = _LineFit()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 1)).astype(np.float32)
    good = (torch.as_tensor(x), torch.as_tensor(2 * x), torch.as_tensor(x[:8]), torch.as_tensor(2 * x[:8]))
    # validation pairs whose relation is the opposite of the training pairs': validation worsens as it fits
    bad = (torch.as_tensor(x), torch.as_tensor(2 * x), torch.as_tensor(x[:8]), torch.as_tensor(-2 * x[:8]))
    device = torch.device("cpu")
    fitted = est.fit_members([good, bad], device, [0, 1])
    (models_good, best_good), (models_bad, best_bad) = fitted
    assert best_good["line"].step == est.settings.steps             # went on to the end
    assert 0 < best_bad["line"].step < 20                           # stopped improving early
    for data, seed, models, best in ((good, 0, models_good, best_good), (bad, 1, models_bad, best_bad)):
        alone, alone_best = est.fit(data, device, seed)
        assert alone_best["line"].step == best["line"].step
        for k, v in alone["line"].state_dict().items():           # the kept state is the separate run's best
            torch.testing.assert_close(models["line"].state_dict()[k], v, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(best["line"].state[k], v, rtol=1e-5, atol=1e-6)


class _ReadsItsWeight(_Line):
    def log_prob(self, y, x):          # reads the layer's weight instead of calling it: cannot be stacked
        return -((y - nn.functional.linear(x, self.lin.weight, self.lin.bias)) ** 2).sum(1)


class _ReadsItsWeightFit(_LineFit):
    name = "reads-weight-test"

    def models(self, dx, dy):
        return {"line": _ReadsItsWeight()}


def test_a_network_that_does_not_stack_trains_its_members_one_at_a_time():
    est = _ReadsItsWeightFit()
    data = _data([0, 1], n=200, dim=1)
    members = est.estimate_members(data, [0, 1])
    assert not any(m.batched for m in members) and all(m.error is None for m in members)
    assert [m.value for m in members] == [est.estimate(x, y, seed=s) for (x, y), s in zip(data, [0, 1])]


def test_a_members_bad_data_is_its_own_error():
    est = _estimator("ba")
    data = _data([0, 1, 2])
    x_bad = data[1][0].copy()
    x_bad[3, 0] = np.nan
    data[1] = (x_bad, data[1][1])
    members = est.estimate_members(data, [0, 1, 2])
    assert isinstance(members[1].error, MibenchError) and np.isnan(members[1].value)
    assert all(members[i].batched and members[i].error is None for i in (0, 2))
    assert abs(members[2].value - est.estimate(*data[2], seed=2)) < TOL_DETERMINISTIC
    with pytest.raises(MibenchError, match="NaN"):
        est.estimate_many(data, [0, 1, 2])


def test_stacking_refuses_what_it_cannot_stack():
    class Free(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(2))

    with pytest.raises(Unstackable, match="outside linear layers"):
        stack_members([Free(), Free()])
    seq = [nn.Sequential(nn.Linear(2, 2)), nn.Sequential(nn.Linear(2, 2))]
    seq[1].register_buffer("flag", torch.ones(1))
    seq[0].register_buffer("flag", torch.zeros(1))
    with pytest.raises(Unstackable, match="differs"):
        stack_members(seq)


def test_row_mixing_stays_within_each_member():
    t = torch.arange(12.0).reshape(6, 2)
    assert torch.equal(member_roll(t, -1, 1), torch.roll(t, -1, 0))
    rolled = member_roll(t, -1, 2)
    assert torch.equal(rolled[:3], torch.roll(t[:3], -1, 0)) and torch.equal(rolled[3:], torch.roll(t[3:], -1, 0))
    g = torch.Generator().manual_seed(0)
    assert torch.equal(member_randperm(6, 1, torch.Generator().manual_seed(0)), torch.randperm(6, generator=g))
    perm = member_randperm(9, 3, torch.Generator().manual_seed(1))
    for m in range(3):
        assert sorted(perm[3 * m:3 * m + 3].tolist()) == [3 * m, 3 * m + 1, 3 * m + 2]


def test_a_stacked_linear_layer_computes_each_members_layer():
    torch.manual_seed(0)
    parts = [nn.Linear(3, 4) for _ in range(3)]
    x = torch.randn(3 * 5, 3)
    expected = torch.cat([p(x[5 * i:5 * i + 5]) for i, p in enumerate(parts)]).detach()
    fold = stack_members(parts)
    torch.testing.assert_close(fold(x), expected)
    with torch.no_grad():           # the members' layers are views of the stacked weights
        fold.weight[1].zero_()
    assert torch.count_nonzero(parts[1].weight) == 0 and torch.count_nonzero(parts[0].weight) > 0


@dataclass(frozen=True)
class _TinySettings(ZukoFlowSettings):
    steps: int = 30
    eval_every: int = 10
    batch_size: int = 64
    hidden: int = 16
    layers: int = 2


class _TinyBA(BarberAgakovFlow):
    name = "tiny-ba-test"
    Settings = _TinySettings


def test_the_sample_protocol_records_a_batched_cell_as_separate_runs(monkeypatch):
    import mibench
    from mibench.protocols.sample.job import CellJob, run_job
    from mibench.protocols.sample.run import SampleConfig, prepare, run_sample

    mibench.register_estimator("tiny-ba-test", _TinyBA, replace=True)
    cfg = SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=["gaussian", "tiny-ba-test"], mi=1,
                       n=400, seeds=[0, 1, 2], timeout=None, device="cpu")
    prepared = prepare(cfg)
    assert prepared.batched == {"tiny-ba-test"}
    batched = run_sample(prepared, plot=False)
    monkeypatch.setattr(_TinyBA, "batch_members_on", ())
    assert not prepare(cfg).batched
    separate = run_sample(prepare(cfg), plot=False)
    key = lambda r: (r["estimator"], r["seed"])     # noqa: E731
    assert [key(r) for r in batched.rows] == [key(r) for r in separate.rows]      # the same order too
    for a, b in zip(batched.rows, separate.rows):
        assert abs(a["estimate"] - b["estimate"]) < TOL_DETERMINISTIC
        for col in ("status", "mi_status", "n_parameters", "kind", "error", "n", "true_mi"):
            assert a[col] == b[col], col
    assert batched.config["estimator_settings"] == separate.config["estimator_settings"]
    one = run_job(CellJob("tiny-ba-test", [(np.zeros((50, 1)), np.zeros((50, 1)))] * 2, [0, 1], "cpu"))
    assert [r["status"] for r in one] == ["ok", "ok"] and [r["value_nats"] for r in one] == [0.0, 0.0]


def test_one_adam_over_stacked_parameters_is_each_members_own_adam():
    """The optimizer the estimators train with (kernels.make_adam, fused where torch has it) is elementwise:
    over stacked parameters it updates each member exactly as that member's own optimizer does."""
    from mibench.critics.kernels import make_adam

    gen = torch.Generator().manual_seed(0)
    shapes = [(3, 128, 128), (3, 128), (3, 7)]
    start = [torch.randn(s, generator=gen) for s in shapes]
    stacked = [t.clone().requires_grad_() for t in start]
    alone = [[t[m].clone().requires_grad_() for t in start] for m in range(3)]
    opt, opts = make_adam(stacked, lr=1e-3), [make_adam(ps, lr=1e-3) for ps in alone]
    for step in range(60):
        grads = [torch.randn(s, generator=gen) * 10.0 ** -(step % 7) for s in shapes]
        for p, g in zip(stacked, grads):
            p.grad = g.clone()
        for m, ps in enumerate(alone):
            for p, g in zip(ps, grads):
                p.grad = g[m].clone()
        opt.step()
        for o in opts:
            o.step()
    for m, ps in enumerate(alone):
        for p, q in zip(stacked, ps):
            assert torch.equal(p[m], q)


#: a stacked readout against each member's own readout of the same networks: float32 rounding of the
#: stacked matrix products (measured at most 1.4e-10 nats, width 256)
TOL_READOUT = 1e-7
READOUT_NETS = {"minde-c": {"readout_times": 8}, "minde-j": {"readout_times": 8}, "fmmi-c": {"readout_passes": 2},
                "fmmi-j": {"readout_passes": 2}}


@pytest.mark.parametrize("name,dim", [("minde-c", 3), ("minde-j", 3), ("fmmi-c", 3), ("fmmi-j", 3), ("fmmi-c", 40),
                                      ("fmmi-j", 20)])
def test_a_stacked_readout_is_each_members_own_readout(name, dim):
    """minde-* and fmmi-* read a cell's members out through the stacked networks, each member's rows with
    the draws its own readout makes (fmmi-c at 40 dimensions and fmmi-j at 20 + 20: Hutchinson's probes)."""
    est = ESTIMATORS.get(name).obj().with_settings(hidden=32, device="cpu", **READOUT_NETS[name])
    nets = []
    for seed in range(3):
        torch.manual_seed(seed)
        nets.append(est.models(dim, dim))
        for p in nets[-1][next(iter(nets[-1]))].parameters():      # weights away from the zero start
            p.data.normal_(0, 0.3)
    gen = torch.Generator().manual_seed(7)
    xs = [torch.randn(50, dim, generator=gen) for _ in nets]
    ys = [x + 0.5 * torch.randn(50, dim, generator=gen) for x in xs]
    with torch.no_grad():
        own = [est.readout(models, x, y) for models, x, y in zip(nets, xs, ys)]
        folds = {k: stack_members([m[k] for m in nets]).requires_grad_(False) for k in nets[0]}
        stacked = est.readout_members(folds, xs, ys)
    assert len({round(v, 6) for v, _ in own}) == 3          # three different members
    for (value, details), (s_value, s_details) in zip(own, stacked):
        assert abs(value - s_value) < TOL_READOUT, (value, s_value)
        assert details.keys() == s_details.keys()
        for key, v in details.items():
            assert np.allclose(v, s_details[key], rtol=0, atol=TOL_READOUT), key


@pytest.mark.parametrize("name", ["minde-c", "fmmi-c"])
def test_a_cell_reads_its_members_out_stacked_where_the_estimator_can(monkeypatch, name):
    est = _estimator(name)
    seeds = [0, 1, 2]
    data = _data(seeds)
    calls = []
    own = type(est).readout
    monkeypatch.setattr(type(est), "readout", lambda self, *a: calls.append(1) or own(self, *a))
    members = est.estimate_members(data, seeds, stacked=True)
    assert all(m.batched and m.error is None for m in members) and not calls       # no member read on its own
    # where the stacked readout fails, each member is read out on its own networks (the same values); the
    # failure is the several members' call's: minde's own readout is readout_members with one member
    stacked_read = type(est).readout_members
    monkeypatch.setattr(type(est), "readout_members",
                        lambda self, folds, xs, ys: 1 / 0 if len(xs) > 1 else stacked_read(self, folds, xs, ys))
    again = est.estimate_members(data, seeds, stacked=True)
    assert len(calls) == 2 * len(seeds)               # the test pairs and as many training pairs, per member
    for a, b in zip(members, again):
        assert abs(a.value - b.value) < TOL_READOUT and a.last.keys() == b.last.keys()
        assert a.status == b.status


def test_the_moving_average_takes_the_buffers_as_they_stand():
    """``ema`` averages the weights; a buffer (minde's frequencies, a constant) is copied, where an
    average drifted it by float rounding: decay * b + (1 - decay) * b is not b."""
    est = _estimator("minde-c").with_settings(ema=0.995, steps=60, eval_every=20)
    assert est.settings.ema > 0
    data = [tuple(torch.as_tensor(a, dtype=torch.float32) for a in pair) for pair in _data([0, 1])]
    datas = [(x[:300], y[:300], x[300:], y[300:]) for x, y in data]
    freqs = torch.tensor([1.0, 2.0, 4.0, 8.0]) * torch.pi
    device = torch.device("cpu")
    _, best = est.fit(datas[0], device, 0)
    stacked = est.fit_members(datas, device, [0, 1])
    for b in [best, *(s[1] for s in stacked)]:
        state = b["denoiser"].state
        assert b["denoiser"].step > 20 and torch.equal(state["freqs"], freqs)


def test_a_sample_run_stacks_its_levels_and_seeds_in_one_cell(monkeypatch):
    """The run's levels share one shape: each batched estimator trains every (level, seed) pair it misses
    as one cell (in groups of levels whose datasets fit in CELL_MAX_BYTES), each row its separate run's."""
    import mibench
    from mibench.protocols.sample import run as sample_run

    mibench.register_estimator("tiny-ba-test", _TinyBA, replace=True)
    cfg = sample_run.SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=["gaussian", "tiny-ba-test"],
                                  mi="0.5,1", n=400, seeds=[0, 1], timeout=None, device="cpu")
    sizes = []
    cell = sample_run.estimate_cell
    monkeypatch.setattr(sample_run, "estimate_cell", lambda job: sizes.append(len(job.seeds)) or cell(job))
    batched = sample_run.run_sample(sample_run.prepare(cfg), plot=False)
    assert sizes == [4]                                   # 2 levels x 2 seeds, one job
    task = sample_run.prepare(cfg).task
    per_level = 400 * (task.dim_x + task.dim_y) * 8 * 2   # n x (dim_x + dim_y) x float64 x seeds
    monkeypatch.setattr(sample_run, "CELL_MAX_BYTES", per_level)
    sizes.clear()
    by_level = sample_run.run_sample(sample_run.prepare(cfg), plot=False)
    assert sizes == [2, 2]                                # one level's datasets fit at a time
    monkeypatch.setattr(sample_run, "CELL_MAX_BYTES", per_level - 1)
    sizes.clear()
    monkeypatch.setattr(_TinyBA, "batch_members_on", ())
    separate = sample_run.run_sample(sample_run.prepare(cfg), plot=False)
    assert sizes == []
    key = lambda r: (r["true_mi"], r["seed"], r["estimator"])     # noqa: E731
    for run in (batched, by_level):
        assert [key(r) for r in run.rows] == [key(r) for r in separate.rows]
        for a, b in zip(run.rows, separate.rows):
            assert abs(a["estimate"] - b["estimate"]) < TOL_DETERMINISTIC and a["status"] == b["status"]


def test_a_subclass_with_its_own_readout_reads_its_members_one_at_a_time(monkeypatch):
    from mibench.estimators.generative.minde import MINDE

    class _Shifted(MINDE):
        def readout(self, models, x, y):
            value, details = super().readout(models, x, y)
            return value + 1.0, details

    est = _Shifted().with_settings(**SMALL, **NETS["minde-c"])
    seeds = [0, 1]
    data = _data(seeds)
    members = est.estimate_members(data, seeds, stacked=True)
    plain = _estimator("minde-c").estimate_members(data, seeds, stacked=True)
    for a, b in zip(members, plain):
        assert a.batched and abs(a.value - (b.value + 1.0)) < TOL_READOUT
