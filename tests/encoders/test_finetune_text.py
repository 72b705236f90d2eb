"""The fine-tuned text encoder (mibench.data.finetune): entry point on a tiny budget, determinism,
cache location and key, and that its identity keeps embeddings of different encoders apart."""
from __future__ import annotations

import dataclasses
import hashlib
import os

import pytest

from mibench.data import embeddings as E
from mibench.data import finetune as FT
from mibench.data.sources import EMBEDDED, is_present, resolve_data_dir
from mibench.errors import MibenchError

pytest.importorskip("transformers")
ENV = os.environ.get("MIBENCH_DATA")
FULL = resolve_data_dir(ENV) if ENV else None
HAVE_IMDB = FULL not in (None, EMBEDDED) and is_present("imdb", FULL)
needs_imdb = pytest.mark.skipif(not HAVE_IMDB, reason="needs the full IMDB data (MIBENCH_DATA)")
TINY = FT.FinetuneConfig(n_per_class=3, max_length=8, batch_size=3, epochs=1)


@pytest.fixture
def caches(tmp_path, monkeypatch):
    monkeypatch.setenv("MIBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MIBENCH_ENCODER_CACHE", str(tmp_path / "encoders"))
    return tmp_path


def _md5(path):
    return hashlib.md5((path / "model.safetensors").read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """The tiny recipe (6 reviews, 2 steps of 3 at 8 tokens), trained once for the module."""
    if not HAVE_IMDB:
        pytest.skip("needs the full IMDB data (MIBENCH_DATA)")
    return FT.finetune_text(None, TINY, progress=False, out_dir=tmp_path_factory.mktemp("ft") / "run")


def test_tiny_finetune_writes_a_checkpoint_and_record(tiny_checkpoint):
    rec = tiny_checkpoint
    path = FT.Path(rec["path"])
    for name in ("config.json", "model.safetensors", "modules.json", "1_Pooling", "finetune.json", "head.pt"):
        assert (path / name).exists(), name
    assert rec["n_train"] == 6 and rec["steps"] == 2 and rec["cache"] == "trained"
    assert rec["held_out"]["split"] == "test" and rec["held_out"]["n"] == 6 and 0 <= rec["held_out"]["accuracy"] <= 1
    assert rec["train_seconds"] >= 0 and rec["recipe"]["config"] == dataclasses.asdict(TINY)
    assert E.pooling_config(path) == E.pooling_config(E.packaged_minilm_dir())   # pools like its base
    # a second call with the same recipe reuses the folder
    again = FT.finetune_text(None, TINY, progress=False, out_dir=path)
    assert again["cache"] == "hit" and again["recipe_hash"] == rec["recipe_hash"]


@pytest.mark.slow
def test_tiny_finetune_is_deterministic(tiny_checkpoint, tmp_path):
    a = FT.Path(tiny_checkpoint["path"])
    b = FT.Path(FT.finetune_text(None, TINY, progress=False, out_dir=tmp_path / "again")["path"])
    assert _md5(a) == _md5(b)
    assert _md5(a) != hashlib.md5((E.packaged_minilm_dir() / "model.safetensors").read_bytes()).hexdigest()


def test_recipe_decides_the_cache_folder(caches):
    base = E.base_identity()["fingerprint"]
    d0 = FT.checkpoint_dir(FT.DEFAULT_CONFIG, base)
    assert d0.parent == caches / "encoders" and d0.name.startswith("minilm-imdb-")
    assert FT.checkpoint_dir(dataclasses.replace(FT.DEFAULT_CONFIG, lr=1e-5), base) != d0
    assert FT.checkpoint_dir(FT.DEFAULT_CONFIG, "another-base") != d0
    assert FT.checkpoint_dir(FT.DEFAULT_CONFIG, base) == d0
    assert FT.cached_checkpoint() is None


def test_identity_and_embedding_key_separate_encoders(tiny_checkpoint, caches, monkeypatch):
    """The fine-tuned identity carries the recipe, data and subset hashes and the weights'
    fingerprint; it enters the embedding key, so no other encoder's embeddings are reused."""
    path = FT.Path(tiny_checkpoint["path"])
    monkeypatch.setattr(E, "cached_checkpoint", lambda cfg=None: path)
    ident = E.encoder_identity(None)
    assert ident["encoder"] == "minilm-imdb" and ident["pooling"] == "mean+l2norm"
    assert ident["finetune"]["recipe"] == tiny_checkpoint["recipe_hash"]
    assert ident["finetune"]["train_rows"] == tiny_checkpoint["train_rows_sha"]
    base = E.encoder_identity("all-MiniLM-L6-v2")
    shipped = E.shipped_default_identity()
    assert ident["fingerprint"] != base["fingerprint"]
    keys = {E.key_hash(E.embedding_key("md5", i, 256, "train", 1500, 0)) for i in (ident, base, shipped)}
    assert len(keys) == 3
    assert E.resolve_encoder(None) == ("minilm-imdb", path)
    assert E.resolve_encoder("all-MiniLM-L6-v2")[0] == "all-MiniLM-L6-v2"


def test_default_identity_without_weights_is_the_shipped_one(caches):
    """A fresh clone has no fine-tuned weights: the default identity is the shipped subset's (enough
    to find the default pool's embeddings); computing new ones names the command in one line."""
    assert E.encoder_identity(None) == E.shipped_default_identity()
    with pytest.raises(MibenchError) as e:
        E.resolve_encoder(None)
    assert "mibench encoders finetune-text" in str(e.value) and "\n" not in str(e.value)


@needs_imdb
def test_default_pool_on_full_data_needs_no_weights(caches):
    """Full data, no fine-tuned weights, empty caches: the default pool is seeded from the shipped
    copy; another subset size needs the weights and says how to make them."""
    from mibench.tasks.text import load_imdb_pool

    _, info = load_imdb_pool(str(FULL), progress=False)
    assert info["encoder"]["encoder"] == "minilm-imdb" and "seeded" in info["data_source"]
    with pytest.raises(MibenchError, match="finetune-text"):
        load_imdb_pool(str(FULL), n_per_class=1600, progress=False)


def test_cli_help_and_bad_arguments(capsys):
    from mibench.cli import main

    with pytest.raises(SystemExit) as e:
        main(["encoders", "finetune-text", "--help"])
    assert e.value.code == 0 and "IMDB" in capsys.readouterr().out
    assert main(["encoders", "finetune-text", "--n-per-class", "0"]) == 2
    assert "--n-per-class must be >= 1" in capsys.readouterr().err
