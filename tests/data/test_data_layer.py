"""Data layer: directory resolution, checksums (cached), loaders, clear offline errors, the
embedding cache and its invalidation, the embedded subset, and `mibench data`.

Point MIBENCH_DATA at the full data (CI: ``MIBENCH_DATA=../shared/data``); tests that need it are
skipped otherwise.  Derived caches go to a temporary MIBENCH_CACHE.  Never embeds more than 8 reviews.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from mibench.data import sources
from mibench.data.sources import EMBEDDED, ensure_dataset, is_present, resolve_data_dir
from mibench.errors import DataNotFoundError, MibenchError

ENV_DATA = os.environ.get("MIBENCH_DATA")
FULL = resolve_data_dir(ENV_DATA) if ENV_DATA else None
HAVE_FULL = FULL not in (None, EMBEDDED) and all(is_present(n, FULL) for n in ("mnist", "cifar10", "imdb"))
needs_full = pytest.mark.skipif(not HAVE_FULL, reason="set MIBENCH_DATA to the full data (e.g. ../shared/data)")


# every test here runs with an empty, private mibench cache (see conftest.isolated_cache)
pytestmark = pytest.mark.usefixtures("isolated_cache")


# --------------------------------------------------------------------------------------------- dirs

def test_resolution_order(monkeypatch, tmp_path):
    monkeypatch.setenv("MIBENCH_DATA", str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resolve_data_dir(tmp_path / "arg") == (tmp_path / "arg").resolve()
    assert resolve_data_dir() == (tmp_path / "env").resolve()
    monkeypatch.delenv("MIBENCH_DATA")
    assert resolve_data_dir() == tmp_path / "xdg" / "mibench"
    assert resolve_data_dir("embedded") == EMBEDDED
    monkeypatch.setenv("MIBENCH_DATA", "Embedded")
    assert resolve_data_dir() == EMBEDDED


def test_relative_data_dir_is_resolved_against_cwd(monkeypatch, tmp_path):
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.setenv("MIBENCH_DATA", "../shared/data")
    assert resolve_data_dir() == (tmp_path / "shared" / "data").resolve()


def test_missing_dataset_offline_is_one_clear_error(tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        ensure_dataset("mnist", tmp_path)
    msg = str(err.value)
    assert "\n" not in msg
    assert str(tmp_path / "mnist" / "train-images-idx3-ubyte.gz") in msg and "t10k-labels-idx1-ubyte.gz" in msg
    with pytest.raises(DataNotFoundError, match="test_batch"):
        ensure_dataset("cifar10", tmp_path)
    with pytest.raises(DataNotFoundError, match="imdb_aclImdb_v1.csv.gz"):
        ensure_dataset("imdb", tmp_path)
    with pytest.raises(MibenchError, match="unknown dataset"):
        ensure_dataset("svhn", tmp_path)


def test_md5_cached_by_size_and_mtime(tmp_path, monkeypatch):
    f = tmp_path / "blob"
    f.write_bytes(b"mibench" * 100)
    want = hashlib.md5(f.read_bytes()).hexdigest()
    assert sources.cached_md5(f) == want
    monkeypatch.setattr(sources, "md5_file", lambda p: pytest.fail("md5 recomputed for an unchanged file"))
    assert sources.cached_md5(f) == want
    monkeypatch.undo()
    f.write_bytes(b"changed")  # new size -> recomputed
    assert sources.cached_md5(f) == hashlib.md5(b"changed").hexdigest()


def test_checksum_mismatch_is_refused_unless_skipped(tmp_path, monkeypatch):
    for spec in sources.DATASETS["mnist"].files:
        p = tmp_path / spec.relpath
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"not mnist")
    with pytest.raises(MibenchError, match="checksum mismatch"):
        ensure_dataset("mnist", tmp_path)
    monkeypatch.setenv("MIBENCH_SKIP_MD5", "1")
    _, rows = ensure_dataset("mnist", tmp_path)
    assert all("MISMATCH" in r["status"] for r in rows)


def test_a_damaged_idx_file_is_unusable_input_not_a_usage_error(tmp_path):
    """With the checksum skipped, a gzip holding no IDX exited 2 (a usage error); docs/run-directory.md's
    table calls a damaged data file unusable input (exit 4)."""
    import gzip

    from mibench.data.loaders import _read_idx
    from mibench.errors import UnreadableInput

    p = tmp_path / "bad-idx.gz"
    p.write_bytes(gzip.compress(b"\x00\x00\x07\x01rest"))
    with pytest.raises(UnreadableInput, match="not an IDX uint8 file"):
        _read_idx(p)


def test_cifar_accepts_any_subset_of_batches(tmp_path, monkeypatch):
    import pickle

    d = tmp_path / sources.CIFAR_DIR
    d.mkdir(parents=True)
    data = np.arange(4 * 3072, dtype=np.uint8).reshape(4, 3072)
    with open(d / "data_batch_3", "wb") as f:
        pickle.dump({b"data": data, b"labels": [0, 1, 2, 3]}, f, protocol=2)
    monkeypatch.setenv("MIBENCH_SKIP_MD5", "1")  # a synthetic batch cannot match the published md5
    from mibench.data.loaders import load_cifar10

    images, labels, batches, _ = load_cifar10(tmp_path)
    assert images.shape == (4, 3, 32, 32) and batches == ["data_batch_3"]
    assert np.array_equal(images[1].reshape(-1), data[1]) and labels.tolist() == [0, 1, 2, 3]


# ------------------------------------------------------------------------------------------ loaders

@needs_full
def test_full_loaders_match_the_readme():
    from mibench.data.loaders import imdb_subset_indices, load_cifar10, load_imdb, load_mnist

    images, labels, rows = load_mnist(FULL, "train")
    assert images.shape == (60000, 28, 28) and images.dtype == np.uint8
    assert np.bincount(labels).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert labels[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert all(r["status"] == "ok" for r in rows)
    cif, clab, batches, rows = load_cifar10(FULL)
    assert cif.shape == (10000, 3, 32, 32) and np.bincount(clab).tolist() == [1000] * 10
    assert "lossy" in rows[0]["status"]
    df, md5, _ = load_imdb(FULL)
    assert len(df) == 50000 and md5 == "fc5b3ff8bc85836d75ca25d20b0b7a42"
    lab, split = df["label"].to_numpy(), df["split"].to_numpy()
    small = imdb_subset_indices(lab, split, "train", 4)
    big = imdb_subset_indices(lab, split, "train", 10)
    assert lab[small].tolist() == [0] * 4 + [1] * 4 and set(split[big]) == {"train"}
    assert np.array_equal(small[:4], big[:4]) and np.array_equal(small[4:], big[10:14])  # prefix-stable


# --------------------------------------------------------------------------------------- embeddings

def _tiny_bert(path: Path) -> Path:
    """A genuinely different (random, 32-d) BERT with the MiniLM tokenizer: a second encoder."""
    import transformers

    from mibench.data.embeddings import packaged_minilm_dir

    src = packaged_minilm_dir()
    cfg = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=64)
    torch.manual_seed(0)
    transformers.BertModel(cfg).save_pretrained(path)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(src / name, path / name)
    return path


@needs_full
def test_embedding_cache_hit_and_invalidation_on_encoder_change(tmp_path):
    from mibench.data.embeddings import encoder_identity, imdb_embeddings

    kw = dict(n_per_class=4, max_length=32, progress=False)
    a, la, ma = imdb_embeddings(FULL, "all-MiniLM-L6-v2", **kw)    # the off-the-shelf packaged encoder
    assert ma["cache"] == "computed" and a.shape == (8, 384) and la.tolist() == [0] * 4 + [1] * 4
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)  # MiniLM: mean pooling + L2 norm
    a2, _, ma2 = imdb_embeddings(FULL, "all-MiniLM-L6-v2", **kw)
    assert ma2["cache"] == "hit" and np.array_equal(a, a2)

    tiny = _tiny_bert(tmp_path / "tiny-bert")
    assert encoder_identity(tiny)["fingerprint"] != encoder_identity("all-MiniLM-L6-v2")["fingerprint"]
    b, _, mb = imdb_embeddings(FULL, str(tiny), **kw)
    assert mb["cache"] == "computed" and b.shape == (8, 32) and mb["cache_file"] != ma["cache_file"]
    assert not encoder_identity(tiny)["normalize"]  # plain BERT: raw mean pooling
    _, _, mb2 = imdb_embeddings(FULL, str(tiny), **kw)
    assert mb2["cache"] == "hit"
    _, _, mc = imdb_embeddings(FULL, str(tiny), n_per_class=4, max_length=16, progress=False)
    assert mc["cache"] == "computed"  # max_length is part of the key too


def test_unknown_encoder_is_refused(tmp_path):
    from mibench.data.embeddings import resolve_encoder

    with pytest.raises(MibenchError, match="unknown encoder"):
        resolve_encoder(str(tmp_path / "no-such-encoder"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(MibenchError, match="no config.json"):
        resolve_encoder(str(tmp_path / "empty"))


# ---------------------------------------------------------------------------------- embedded subset

def test_embedded_subset_is_small_and_matches_its_provenance():
    from mibench.data import embedded

    prov = embedded.provenance()
    total = 0
    for name, fname in embedded.FILES.items():
        path = embedded.EMBEDDED_DIR / fname
        data = path.read_bytes()
        total += len(data)
        assert hashlib.md5(data).hexdigest() == prov["parts"][name]["md5"], name
    assert total < 8e6
    z = embedded.load("mnist")
    assert z["images"].dtype == np.uint8 and set(np.unique(z["labels"])) == {0, 1}
    assert embedded.load("cifar10")["images"].shape[1:] == (3, 32, 32)
    imdb = embedded.load("imdb")
    assert imdb["embeddings"].dtype == np.float16 and imdb["embeddings"].shape[1] == 384
    assert np.bincount(imdb["labels"]).tolist() == [prov["parts"]["imdb"]["n_per_class"]] * 2


# ----------------------------------------------------------------------------------------- the CLI

def test_mibench_data_command(capsys, tmp_path):
    from mibench.cli import main

    assert main(["data", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path) in out and "MISSING" in out and "embedded subset" in out
    if HAVE_FULL:
        assert main(["data", "--data-dir", str(FULL), "--json"]) == 0
        st = json.loads(capsys.readouterr().out)
        assert all(d["present"] for d in st["datasets"])
        md5s = {f["file"]: f["md5"] for d in st["datasets"] for f in d["files"] if f["present"]}
        assert md5s["mnist/train-labels-idx1-ubyte.gz"] == "d53e105ee54ea40749a09fcbcd1e9432"


@needs_full
def test_default_subset_is_seeded_from_the_shipped_copy_not_recomputed(monkeypatch):
    from mibench.data import embedded, embeddings

    monkeypatch.setattr(embeddings, "embed_texts", lambda *a, **k: pytest.fail("recomputed the default subset"))
    emb, labels, meta = embeddings.imdb_embeddings(FULL)  # defaults: minilm-imdb, 1500/class, train, 128 tokens
    assert meta["cache"].startswith("seeded from the shipped")
    shipped = embedded.load("imdb")
    assert np.array_equal(emb, shipped["embeddings"].astype(np.float32))
    assert np.array_equal(labels, shipped["labels"]) and meta["rows"] == shipped["source_row"].tolist()
    _, _, again = embeddings.imdb_embeddings(FULL)
    assert again["cache"] == "hit"


@pytest.mark.parametrize("argv,msg", [(["--n-per-class", "-3"], "--n-per-class must be an integer >= 2"),
                                       (["--max-length", "1"], "--max-length must be an integer >= 2")])
def test_mibench_data_prepare_refuses_bad_flags_before_reading_data(argv, msg, tmp_path, capsys):
    from mibench.cli import main

    # an empty data directory: the flag is refused, not reported as missing MNIST
    assert main(["data", "--data-dir", str(tmp_path), "--prepare", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]


def test_mibench_data_prepare_on_the_embedded_subset(capsys):
    from mibench.cli import main

    assert main(["data", "--data-dir", "embedded", "--prepare"]) == 0
    err = capsys.readouterr().err
    assert "MNIST 0/1 pool" in err and "decoder accuracy 1.0" in err and "IMDB pool" in err
