"""The shipped float16 IMDB embeddings are what today's code computes with the default encoder.

In a module of its own: tests/test_packaging.py points MIBENCH_CACHE at an empty directory for the
rest of its module (``isolated_cache``), where the cached fine-tuned weights this check needs cannot
be found, so there it always skipped."""
from __future__ import annotations

import os

import numpy as np
import pytest


def _full_imdb():
    from mibench.data.sources import EMBEDDED, is_present, resolve_data_dir

    full = os.environ.get("MIBENCH_DATA")
    if not full or resolve_data_dir(full) == EMBEDDED or not is_present("imdb", resolve_data_dir(full)):
        pytest.skip("needs the full IMDB data (MIBENCH_DATA)")
    return resolve_data_dir(full)


def test_shipped_subset_matches_the_current_pooling():
    """The shipped float16 IMDB embeddings equal what today's embed_texts computes for the same
    reviews with the default (fine-tuned) encoder (mean pooling + L2 norm read from the
    checkpoint's config), to float16 rounding."""
    from mibench.data import embedded
    from mibench.data import embeddings as E
    from mibench.data.loaders import load_imdb

    df, _, _ = load_imdb(_full_imdb())
    if E.cached_checkpoint() is None or E.encoder_identity(None) != E.shipped_default_identity():
        pytest.skip("needs the fine-tuned weights the shipped subset was made with (mibench encoders finetune-text)")
    z = embedded.load("imdb")
    pick = [0, 1500, 2999]
    texts = df["text"].to_numpy()[z["source_row"][pick]]
    got = E.embed_texts(texts, None, max_length=E.default_max_length(), progress=False)
    np.testing.assert_allclose(got, z["embeddings"][pick].astype(np.float32), atol=1e-3, rtol=0)
    assert np.abs(got - z["embeddings"][pick]).max() < np.abs(got).max() * 2 ** -10 * 2
