"""Encoders g (issue 6): invertibility of the flows / i-RevNet, ResNet layer features, the wrapper
task's truth record, the CLI end to end, and one-line errors for bad names."""
import json

import pytest
import torch

from mibench.cli import main
from mibench.encoders import ENCODERS, make_encoder, reconstruction_error
from mibench.encoders.resnet import LAYERS, ResNet18, ResNetFeatures, train_resnet
from mibench.errors import MibenchError
from mibench.tasks import make_task
from mibench.tasks.transformed import TransformedTask

INVERTIBLE = ["realnvp", "maf", "irevnet"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """ResNet weights trained by the tests go to a temporary cache, never the user's."""
    monkeypatch.setenv("MIBENCH_ENCODER_CACHE", str(tmp_path / "encoders"))


def _data(shape, n=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, *shape, generator=g).reshape(n, -1)


@pytest.mark.parametrize("name", INVERTIBLE)
@pytest.mark.parametrize("shape", [(1, 16, 16), (3, 8, 8), (384,)])
def test_invertible_reconstruction(name, shape):
    if name == "maf" and shape == (384,):
        shape = (96,)   # MAF's inverse is sequential (one pass per coordinate): keep it small
    enc = make_encoder(name, shape, seed=3)
    assert enc.invertible and enc.out_dim == enc.in_dim
    x = _data(shape)
    z = enc.encode(x)
    assert z.shape == x.shape and torch.isfinite(z).all()
    assert not torch.allclose(z, x, atol=1e-2), "g should not be (close to) the identity"
    assert reconstruction_error(enc, x) < 1e-4               # float32
    assert reconstruction_error(enc.double(), x.double()) < 1e-10   # float64


@pytest.mark.parametrize("name", INVERTIBLE)
def test_invertible_is_seeded_and_batch_independent(name):
    shape = (1, 8, 8)
    x = _data(shape, n=10)
    a, b = make_encoder(name, shape, seed=1), make_encoder(name, shape, seed=1)
    assert torch.equal(a.encode(x), b.encode(x))
    assert not torch.allclose(a.encode(x), make_encoder(name, shape, seed=2).encode(x))
    assert torch.allclose(a.encode(x)[:3], a.encode(x[:3]), atol=1e-6)   # no cross-sample mixing


def test_irevnet_needs_even_side():
    with pytest.raises(MibenchError, match="use an even --side"):
        make_encoder("irevnet", (1, 15, 15))
    with pytest.raises(MibenchError, match="use an even --dim or --ds"):    # a vector task has no --side
        make_encoder("irevnet", (3,))


def test_resnet_layer_shapes():
    model = ResNet18(1, 4, width=4).eval()
    expect = {"stem": (4, 16, 16), "layer1": (4, 16, 16), "layer2": (8, 8, 8), "layer3": (16, 4, 4),
              "layer4": (32, 2, 2), "pool": (32,)}
    x = _data((1, 16, 16), n=5)
    for layer in LAYERS:
        enc = ResNetFeatures((1, 16, 16), model, layer, {"accuracy": {"source_accuracy": 1.0}})
        assert enc.feature_shape == expect[layer]
        z = enc.encode(x)
        assert z.shape == (5, torch.Size(expect[layer]).numel()) and not enc.invertible


@pytest.fixture(scope="module")
def tiny_vision():
    return make_task("vision", layout="1x1x2", side=16, n_per_class=200)


def test_resnet_training_and_wrapper_records_bound(tiny_vision, tmp_path):
    model, rec = train_resnet(tiny_vision, width=4, steps=3, batch=8, eval_n=64, progress=False,
                              path=tmp_path / "r.pt")
    acc = rec["accuracy"]
    assert 0.0 <= acc["source_accuracy"] <= 1.0 and acc["decisions"] == 2 * 64 * 2
    assert (tmp_path / "r.json").is_file() and json.loads((tmp_path / "r.json").read_text())["steps"] == 3
    # the registered transform trains (cached in MIBENCH_CACHE) on first use, then loads
    import mibench.encoders.resnet as R

    old = (R.DEFAULT_STEPS, R.DEFAULT_WIDTH, R.DEFAULT_EVAL_N)
    R.DEFAULT_STEPS, R.DEFAULT_WIDTH, R.DEFAULT_EVAL_N = 2, 4, 32
    try:
        for layer in ("stem", "layer3", "pool"):
            task = TransformedTask(tiny_vision, "resnet", layer=layer)
            x, y = task.sample(6, 1.0, torch.Generator().manual_seed(0))
            assert x.shape == (6, task.dim_x) and y.shape == (6, task.dim_y)
            info = task.info()
            assert info["task"] == f"vision+resnet-{layer}" and info["invertible"] is False
            assert info["layer"] == layer and "classifier_accuracy" in info["encoder"]
            if info["encoder"]["decodes_perfectly"]:
                assert info["truth_kind"] == "checked"      # on a sample of canvases, not proven
            else:
                assert info["truth_kind"] == "upper bound" and "data-processing" in info["true_mi"]
    finally:
        R.DEFAULT_STEPS, R.DEFAULT_WIDTH, R.DEFAULT_EVAL_N = old


@pytest.mark.parametrize("name", INVERTIBLE)
def test_wrapper_info_invertible(tiny_vision, name):
    task = TransformedTask(tiny_vision, name)
    info = task.info()
    assert info["transform"] == name and info["invertible"] is True and info["truth_kind"] == "exact"
    assert info["base_task"] == "vision" and info["encoder"]["transform"] == name
    assert task.max_mi_bits == tiny_vision.max_mi_bits == 2
    x, y = task.sample(4, 2.0, torch.Generator().manual_seed(1))
    bx, by = tiny_vision.sample(4, 2.0, torch.Generator().manual_seed(1))
    assert torch.allclose(task.gx.inverse(x), bx, atol=1e-4) and torch.allclose(task.gy.inverse(y), by, atol=1e-4)


def test_cli_run_with_transform(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["run", "--task", "vision", "--transform", "realnvp", "--steps", "20", "--hidden", "16",
                 "--layers", "1", "--batch-size", "8", "--mi", "1", "--layout", "1x1x2", "--side", "16",
                 "--n-per-class", "200", "--out", str(out), "--device", "cpu", "--quiet", "--no-plot"])
    assert code == 0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["status"] == "complete"
    ti = cfg["task_info"]
    assert ti["task"] == "vision+realnvp" and ti["invertible"] is True and ti["truth_kind"] == "exact"
    assert "vision+realnvp" in (out / "summary.csv").read_text()


@pytest.mark.parametrize("args,match", [
    (["--transform", "nope"], "unknown transform 'nope'"),
    (["--transform", "realnvpp"], "did you mean 'realnvp'"),
    (["--transform", "resnet", "--layer", "layer9"], "unknown ResNet layer 'layer9'"),
    (["--transform", "maf", "--layer", "pool"], "resnet transform only"),
    (["--layer", "pool"], "--layer needs --transform resnet"),
])
def test_bad_names_are_one_line(args, match, capsys):
    code = main(["run", "--task", "vision", "--steps", "5", "--quiet", *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("mibench: error:") and match in err[0], err


def test_resnet_refuses_non_vision():
    with pytest.raises(MibenchError, match="vision"):
        make_task("gaussian", dim=4, transform="resnet")


def test_registry_lists_all():
    assert set(ENCODERS.names()) == {"realnvp", "maf", "irevnet", "resnet"}


def test_flows_on_vectors_and_mixed_shapes():
    task = make_task("gaussian", dim=6, transform="maf")
    x, y = task.sample(5, 1.0, torch.Generator().manual_seed(0))
    assert x.shape == (5, 6) and task.info()["truth_kind"] == "exact"


def test_layer_study_table_and_plot(tiny_vision, tmp_path):
    """Runs with --transform resnet --layer ... -> resnet_layers.csv / .png with truth and accuracies."""
    import mibench.encoders.resnet as R
    from mibench.analysis.layer_study import run_layer_study
    from mibench.protocols.stream.run import RunConfig, run

    old = (R.DEFAULT_STEPS, R.DEFAULT_WIDTH, R.DEFAULT_EVAL_N)
    R.DEFAULT_STEPS, R.DEFAULT_WIDTH, R.DEFAULT_EVAL_N = 2, 4, 32
    try:
        for layer in (None, "stem", "pool"):
            params = {"layout": "1x1x2", "side": 16, "n_per_class": 200}
            if layer:
                params.update(transform="resnet", layer=layer)
            cfg = RunConfig(task="vision", task_params=params, estimators=["infonce"], hidden=8, layers=1,
                            steps=10, batch_size=8, mi=1, device="cpu", log_every=5)
            run(cfg, out_dir=tmp_path / "sweep" / f"r_{layer}", plot=False)
        csv, png = run_layer_study([tmp_path / "sweep"], tmp_path / "out", n_probe=64)
    finally:
        R.DEFAULT_STEPS, R.DEFAULT_WIDTH, R.DEFAULT_EVAL_N = old
    import pandas as pd

    df = pd.read_csv(csv)
    assert list(df["layer"]) == ["raw", "stem", "pool"] and png.is_file()
    assert {"true_mi", "truth_kind", "resnet_source_accuracy", "linear_probe_accuracy",
            "feature_shape"} <= set(df.columns)
    assert df.loc[df.layer == "stem", "feature_shape"].item() == "4x16x16"


def test_encoder_presets_expand():
    sweep = pytest.importorskip("mibench.sweep")
    from mibench.sweep.presets.encoders import PRESETS

    for name, p in PRESETS.items():
        for form in ("quick", "full"):
            cells = sweep.SweepSpec.from_dict({**p[form], "name": name}).cells()
            assert cells and all(c.config["task"] in ("vision", "text") for c in cells)
