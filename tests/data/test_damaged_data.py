"""Damaged data and caches are one line, never a traceback or a half-written file: MNIST / CIFAR-10 files
that do not decode, a checksum record older than an edit, `mibench data` on odd data directories, and
the IMDB embedding cache (written atomically, rebuilt when it cannot be read).

Every dataset here is a small synthetic copy under ``tmp_path`` (with ``MIBENCH_SKIP_MD5=1`` where it
cannot match the published md5); nothing needs the full data or embeds a review.
"""
from __future__ import annotations

import gzip
import pickle

import numpy as np
import pytest

from mibench.data import embeddings, sources
from mibench.errors import EXIT_BAD_INPUT, MibenchError, UnreadableInput

pytestmark = pytest.mark.usefixtures("isolated_cache")

MNIST_FILES = [f.relpath for f in sources.DATASETS["mnist"].files]


def _idx(shape, payload: bytes = b"") -> bytes:
    ndim = len(shape)
    header = (0x0800 | ndim).to_bytes(4, "big") + b"".join(int(n).to_bytes(4, "big") for n in shape)
    return gzip.compress(header + payload)


def _mnist(root, train_images: bytes) -> None:
    """The four MNIST files, train-images as given, the others small valid IDX files."""
    for rel in MNIST_FILES:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(train_images if "train-images" in rel else
                      _idx((2, 28, 28), bytes(2 * 784)) if "images" in rel else _idx((2,), b"\x00\x01"))


def _cifar(root, batch) -> None:
    d = root / sources.CIFAR_DIR
    d.mkdir(parents=True)
    with open(d / "test_batch", "wb") as f:
        pickle.dump(batch, f, protocol=2)


def _one_damaged_line(exc: BaseException, path) -> str:
    msg = str(exc)
    assert isinstance(exc, UnreadableInput) and exc.exit_code == EXIT_BAD_INPUT
    assert "\n" not in msg and str(path) in msg and "is truncated or damaged" in msg
    return msg


# ------------------------------------------------------------------------- files that do not decode

def test_an_idx_file_cut_inside_its_header_is_damaged_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("MIBENCH_SKIP_MD5", "1")
    from mibench.data.loaders import load_mnist

    _mnist(tmp_path, gzip.compress((0x0803).to_bytes(4, "big") + (60000).to_bytes(4, "big")))  # 8 of 16 bytes
    with pytest.raises(MibenchError) as err:
        load_mnist(tmp_path, "train")
    msg = _one_damaged_line(err.value, tmp_path / MNIST_FILES[0])
    assert "MIBENCH_SKIP_MD5 is set" in msg     # here it is: the checksum was indeed not enforced


@pytest.mark.parametrize("batch,why", [
    ([1, 2, 3], "holds a list"),
    ({b"labels": [0, 1]}, "no 'data' entry"),
    ({b"data": np.zeros((2, 3072), np.uint8)}, "no 'labels' entry"),
    ({b"data": np.zeros((0, 3072), np.uint8), b"labels": []}, "holds no images"),
    ({b"data": np.zeros((3, 3072), np.uint8), b"labels": [0, 1]}, "3 images but labels of shape (2,)"),
])
def test_a_pickle_that_is_not_a_cifar_batch_is_damaged_not_a_traceback(tmp_path, monkeypatch, batch, why):
    monkeypatch.setenv("MIBENCH_SKIP_MD5", "1")
    from mibench.data.loaders import load_cifar10

    _cifar(tmp_path, batch)
    with pytest.raises(MibenchError) as err:
        load_cifar10(tmp_path)
    assert why in _one_damaged_line(err.value, tmp_path / sources.CIFAR_DIR / "test_batch")


def test_a_file_edited_after_its_md5_was_recorded_is_not_blamed_on_skip_md5(tmp_path, monkeypatch, capsys):
    """An edit that keeps size and mtime leaves the remembered md5 in place: the damaged-file line said
    "MIBENCH_SKIP_MD5 is set" though it was not; now it names the real reason and `mibench data --rehash`."""
    from mibench.cli import main
    from mibench.data.loaders import load_mnist

    monkeypatch.delenv("MIBENCH_SKIP_MD5", raising=False)
    _mnist(tmp_path, _idx((2, 28, 28), bytes(100)))     # payload cut short
    published = {}
    records = sources._load_records()
    for f in sources.DATASETS["mnist"].files:            # as if each file had been verified before the edit
        p = (tmp_path / f.relpath).resolve()
        st = p.stat()
        records[str(p)] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "md5": f.md5[0]}
        published[f.relpath] = f.md5[0]
    sources._save_records(records)
    assert main(["data", "--data-dir", str(tmp_path), "--json"]) == 0      # the records are trusted ...
    capsys.readouterr()
    assert main(["data", "--data-dir", str(tmp_path), "--rehash"]) == EXIT_BAD_INPUT   # ... --rehash is not
    out = capsys.readouterr().out
    assert out.count("MISMATCH") == 4

    sources._save_records(records)                       # stale again
    with pytest.raises(MibenchError) as err:
        load_mnist(tmp_path, "train")
    msg = str(err.value)
    assert "MIBENCH_SKIP_MD5" not in msg and "changed after its md5 was checked" in msg and "--rehash" in msg
    assert published[MNIST_FILES[0]] in msg
    row = sources.dataset_status("mnist", tmp_path)["files"][0]      # the record now holds what is there
    assert row["status"].startswith("MISMATCH")


# ---------------------------------------------------------------------------- `mibench data` listings

@pytest.mark.parametrize("how", ["argument", "MIBENCH_DATA"])
@pytest.mark.parametrize("kind,said", [("missing", "it does not exist"), ("empty", "it is empty")])
def test_mibench_data_says_an_explicit_directory_is_missing_or_empty(tmp_path, monkeypatch, capsys, how, kind,
                                                                     said):
    from mibench.cli import main

    d = tmp_path / "data"
    if kind == "empty":
        d.mkdir()
    argv = ["data"]
    if how == "argument":
        argv += ["--data-dir", str(d)]
    else:
        monkeypatch.setenv("MIBENCH_DATA", str(d))
    assert main(argv) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert str(d) in first and said in first
    # run does not fall back to the subset for a directory the user chose: data must not claim it does
    subset = next(line for line in out.splitlines() if line.startswith("embedded subset"))
    assert "not used" in subset and ("--data-dir" if how == "argument" else "MIBENCH_DATA") in subset
    assert "used when the full data is absent" not in out


def test_mibench_data_flags_an_unreadable_file_and_exits_4(tmp_path, monkeypatch, capsys):
    """A file mode 000 (this test may run as root, so opening it is made to fail instead)."""
    from mibench.cli import main

    target = tmp_path / MNIST_FILES[1]
    target.parent.mkdir(parents=True)
    target.write_bytes(b"labels")
    real_open = open

    def no_read(path, *a, **k):
        if str(path) == str(target):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(sources, "open", no_read, raising=False)
    assert main(["data", "--data-dir", str(tmp_path)]) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    line = next(ln for ln in out.splitlines() if MNIST_FILES[1] in ln)
    assert "UNREADABLE: Permission denied" in line
    assert "cifar10" in out and "imdb" in out           # the listing went on
    assert MNIST_FILES[1] in err and "not as expected" in err


def test_a_directory_where_a_data_file_belongs_is_said_so(tmp_path, capsys):
    from mibench.cli import main

    (tmp_path / MNIST_FILES[0]).mkdir(parents=True)
    assert main(["data", "--data-dir", str(tmp_path)]) == EXIT_BAD_INPUT
    line = next(ln for ln in capsys.readouterr().out.splitlines() if MNIST_FILES[0] in ln)
    assert "NOT A FILE: a directory is there" in line and "missing" not in line
    with pytest.raises(MibenchError, match="a directory is there, not the file"):
        sources.ensure_dataset("mnist", tmp_path)


# ---------------------------------------------------------------------------- the IMDB embedding cache

@pytest.fixture
def tiny_imdb(tmp_path, monkeypatch):
    """A 12-review IMDB csv (not the published one, so MIBENCH_SKIP_MD5=1) and a fake encoder:
    ``calls`` counts the embeddings computed."""
    monkeypatch.setenv("MIBENCH_SKIP_MD5", "1")
    csv = tmp_path / sources.IMDB_CSV
    csv.parent.mkdir(parents=True)
    lines = ["text,label,split"] + [f"review {i},{i % 2},{'train' if i < 8 else 'test'}" for i in range(12)]
    csv.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    monkeypatch.setenv("MIBENCH_CACHE", str(tmp_path / "cache"))     # a cache of its own: every test computes
    calls = []

    def fake_embed(texts, *a, **k):
        calls.append(len(texts))
        return np.arange(len(texts) * 4, dtype=np.float32).reshape(len(texts), 4)

    ident = {"encoder": "fake", "fingerprint": "0" * 20, "model_type": "bert", "hidden_size": 4,
             "normalize": False, "pooling": "mean"}
    monkeypatch.setattr(embeddings, "encoder_identity", lambda encoder=None: dict(ident))
    monkeypatch.setattr(embeddings, "resolve_encoder", lambda encoder=None: ("fake", tmp_path))
    monkeypatch.setattr(embeddings, "require_transformers", lambda what: None)
    monkeypatch.setattr(embeddings, "embed_texts", fake_embed)
    monkeypatch.setattr(embeddings, "_threads", lambda: 1)
    return tmp_path, calls


def _embed(root):
    return embeddings.imdb_embeddings(root, "fake", n_per_class=2, max_length=16, progress=False)


@pytest.mark.parametrize("which", ["json", "npy"])
def test_a_damaged_embedding_cache_is_rebuilt_not_a_traceback(tiny_imdb, capsys, which):
    from mibench.cli import main

    root, calls = tiny_imdb
    emb, _, meta = _embed(root)
    assert meta["cache"] == "computed" and calls == [4]
    damaged = embeddings.Path(meta["cache_file"]).with_suffix("." + which)
    data = damaged.read_bytes()
    damaged.write_bytes(data[:len(data) // 2])           # what a crash of an in-place write left
    main(["data", "--data-dir", str(root)])     # exit 4: the synthetic csv does not match its md5
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("cached IMDB embeddings"))
    assert "cannot be read" in line

    again, _, meta2 = _embed(root)
    assert meta2["cache"] == "computed" and calls == [4, 4] and np.array_equal(again, emb)
    err = capsys.readouterr().err
    assert str(damaged) in err and "building it again" in err
    assert _embed(root)[2]["cache"] == "hit"


def test_a_damaged_embedding_cache_that_cannot_be_rebuilt_is_one_line(tiny_imdb, monkeypatch):
    root, _ = tiny_imdb
    meta = _embed(root)[2]
    npy = embeddings.Path(meta["cache_file"])
    npy.write_bytes(npy.read_bytes()[:100])

    def no_encoder(encoder=None):
        raise MibenchError("the encoder is not here")

    monkeypatch.setattr(embeddings, "resolve_encoder", no_encoder)
    with pytest.raises(UnreadableInput) as err:
        _embed(root)
    msg = str(err.value)
    assert "\n" not in msg and str(npy) in msg and "cannot be read" in msg and "the encoder is not here" in msg


def test_the_embedding_cache_is_written_whole_or_not_at_all(tiny_imdb, monkeypatch):
    """A crash (a full disk, Ctrl-C) while a cache file is written leaves no file to be read as the cache."""
    root, calls = tiny_imdb
    folder = sources.cache_dir() / "embeddings"
    real_write_text = embeddings.Path.write_text

    def half_then_fail(self, text, *a, **k):
        real_write_text(self, text[:len(text) // 2], *a, **k)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(embeddings.Path, "write_text", half_then_fail)
    with pytest.raises((OSError, MibenchError)):
        _embed(root)
    assert not list(folder.glob("*.json")) and not [p for p in folder.iterdir() if ".tmp" in p.name]
    monkeypatch.undo()

    def half_npy_then_fail(fh, arr, *a, **k):
        fh.write(b"\x93NUMPY")
        raise KeyboardInterrupt

    monkeypatch.setattr(embeddings.np, "save", half_npy_then_fail)
    for p in folder.iterdir():
        p.unlink()
    with pytest.raises(KeyboardInterrupt):
        embeddings._write_cache(folder / "imdb-x.npy", np.zeros((2, 4), np.float32), {"n": 2})
    assert list(folder.iterdir()) == []


def test_a_missing_text_encoder_is_said_before_announcing_the_embedding(tmp_path, monkeypatch, capsys):
    """The default (fine-tuned) encoder is not in this empty cache: the one error line comes alone, not after
    "embedding N IMDB reviews ..." as if the work had started."""
    monkeypatch.setenv("MIBENCH_SKIP_MD5", "1")
    monkeypatch.delenv("MIBENCH_ENCODER_CACHE", raising=False)
    monkeypatch.setattr(embeddings, "require_transformers", lambda what: None)
    csv = tmp_path / sources.IMDB_CSV
    csv.parent.mkdir(parents=True)
    csv.write_bytes(gzip.compress(b"text,label,split\n" + b"".join(b"r%d,%d,train\n" % (i, i % 2) for i in range(8))))
    if embeddings.cached_checkpoint() is not None:
        pytest.skip("a fine-tuned encoder is cached here")
    with pytest.raises(MibenchError):
        embeddings.imdb_embeddings(tmp_path, None, n_per_class=2, progress=False)
    assert "embedding" not in capsys.readouterr().err
