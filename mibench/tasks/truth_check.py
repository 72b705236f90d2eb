"""Exact check that the class of every source is a function of the *rendered* input.

Why (Lee & Rhee 2024 §4.3-4.4; Lee et al. 2023, Thm 3.2): I(X;Y) = H(C) per source needs an
error-free decoder of C from what the estimator sees -- that such a decoder *exists*, i.e. that C is
a function of X -- not that a particular (linear) decoder finds it on a finite sample.  C is a
function of X exactly when no two inputs that can be sampled with different classes are equal, at
the precision the estimator receives them (float32 here).  This module checks that condition
exhaustively over the pools, vectorised; a linear probe on rendered samples
(:func:`mibench.tasks.pools.rendered_decodability`) stays as a *difficulty* figure.

* **Vision canvas** (:class:`mibench.tasks.vision.Renderer`): the resize is linear with non-negative
  weights, so an output pixel whose weights on every other patch are exactly zero (an *interior*
  pixel of patch p, found by resizing indicator images) is a function of patch p alone, bit for
  bit.  Every pool item is rendered at every position (:func:`render_interiors`); with no nuisance,
  no two items of different classes may have equal values there (exact byte comparison); with a
  nuisance eta, every cross-class pair must differ by more than eta B + 1e-5 on some interior pixel
  (B the largest background value), which separates them under *every* pair of backgrounds.
* **Text blocks**: X is ds kept embeddings side by side, so no two kept items of different classes
  may be identical rows.

Outcomes: ``holds`` (proved), ``fails`` (C is not a function of X: the task refuses in one line),
``not established`` (no interior pixel at some position, or the nuisance bound inconclusive: the
run records it and says so in one line).  The argument in full: docs/tasks.md, "The truth is
checked on what the estimator sees".
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import torch

from mibench.errors import MibenchError

CHECK_VERSION = 2
ROUNDING_MARGIN = 1e-5    # float32 rounding of a + eta * b (a few 1e-7), generously
DENSE_PIXELS = 3          # nuisance test: pixels tried densely over a block before the open pairs are listed
BLOCK = 512               # class-0 items per block
RENDER_CHUNK_BYTES = 256 << 20   # canvases (uint8 and float) rendered at once by render_interiors


def _rows_collide(a: torch.Tensor, b: torch.Tensor) -> int:
    """Number of rows of ``a`` (class 0) byte-identical to some row of ``b`` (class 1)."""
    a = np.ascontiguousarray(a.detach().cpu().numpy())
    b = np.ascontiguousarray(b.detach().cpu().numpy())
    if a.shape[1] == 0:
        return 0
    va = a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()
    vb = b.view(np.dtype((np.void, b.dtype.itemsize * b.shape[1]))).ravel()
    return int(np.isin(va, vb).sum())


def _separated(a: torch.Tensor, b: torch.Tensor, t: float, stop_early: bool = False) -> int:
    """Number of pairs (i, j) of rows of a and b with max_o |a_io - b_jo| <= t (not separated);
    with ``stop_early``, only those of the first block of rows of ``a`` that has any (a lower bound
    that is 0 exactly when every pair is separated: all the check needs, and much faster where the
    bound is hopeless, e.g. eta = 1).

    Pixels are tried from the most discriminative (class means furthest apart) down: a few densely
    over a block of pairs, then only on the pairs still open, which shrink quickly."""
    a, b = a.float(), b.float()
    if t >= 1.0 and float(a.min()) >= 0 and float(b.min()) >= 0 and float(a.max()) <= 1 and float(b.max()) <= 1:
        return int(a.shape[0]) * int(b.shape[0])     # no difference of values in [0, 1] exceeds t
    order = torch.argsort((a.mean(0) - b.mean(0)).abs(), descending=True)
    at, bt = a[:, order].T.contiguous(), b[:, order].T.contiguous()      # (pixels, items)
    d = at.shape[0]
    dense = min(DENSE_PIXELS, d)
    bad = 0
    for s in range(0, a.shape[0], BLOCK):
        blk = at[:dense, s:s + BLOCK]
        open_ = (blk[0, :, None] - bt[0, None, :]).abs() <= t
        for o in range(1, dense):
            open_ &= (blk[o, :, None] - bt[o, None, :]).abs() <= t
        i, j = open_.nonzero(as_tuple=True)
        i = i + s
        for o in range(dense, d):
            if i.numel() == 0:
                break
            keep = (at[o, i] - bt[o, j]).abs() <= t
            i, j = i[keep], j[keep]
        bad += int(i.numel())
        if stop_early and bad:
            break
    return bad


def interior_masks(renderer) -> torch.Tensor:
    """bool (positions, channels * side * side): output pixels that depend on that patch alone.

    The resize is separable with non-negative weights, so output pixel (i, j) depends on the patch
    in grid row a and column b iff output row i depends on input row block a and output column j on
    column block b: the masks are outer products of two 1-D profiles (a block indicator resized
    along one axis), O(positions x side^2) memory instead of one resized full canvas per position."""
    c, r, k = renderer.channels, renderer.rows, renderer.cols
    rows, cols = _only_block(renderer, r), _only_block(renderer, k)            # (r, side), (k, side)
    grid = rows[:, None, :, None] & cols[None, :, None, :]                    # (r, k, side, side)
    eye = torch.eye(c, dtype=torch.bool, device=grid.device)
    masks = eye[:, None, None, :, None, None] & grid[None, :, :, None, :, :]  # (c, r, k, c, side, side)
    return masks.reshape(c * r * k, c * renderer.side * renderer.side)


def _only_block(renderer, blocks: int) -> torch.Tensor:
    """bool (blocks, side): output rows (of a canvas ``blocks`` patches tall) that depend on that
    block of input rows and on no other.  Each block's indicator is resized along the height with
    a width of 2 kept as it is (the resize's arithmetic along one axis does not depend on the
    other's size; a width of 1 is a degenerate case of torch's antialiased kernel)."""
    patch, side = renderer.patch, renderer.side
    ind = torch.zeros(blocks, 1, blocks, patch, 2, device=renderer.device)
    ind[torch.arange(blocks), 0, torch.arange(blocks)] = 1.0
    touched = renderer._resize(ind.reshape(blocks, 1, blocks * patch, 2), (side, 2))[:, 0, :, 0] > 0
    return touched & (touched.sum(0, keepdim=True) == 1)


def render_interiors(renderer, items_u8: torch.Tensor, masks: torch.Tensor, chunk: int = 1024):
    """Per position p, float32 (n_items, |S_p|): each item's exact rendered values (eta = 0, before
    clamping) on the interior pixels of position p.  At most ``chunk`` items are rendered at once,
    fewer where their canvases would exceed :data:`RENDER_CHUNK_BYTES` (each canvas is resized on its
    own, so the chunking changes no value)."""
    c, r, k, PATCH = renderer.channels, renderer.rows, renderer.cols, renderer.patch
    chunk = max(1, min(chunk, RENDER_CHUNK_BYTES // (5 * c * r * k * PATCH * PATCH)))
    out = [[] for _ in range(masks.shape[0])]
    for s in range(0, items_u8.shape[0], chunk):
        it = items_u8[s:s + chunk].to(renderer.device)
        n = it.shape[0]
        grid = it.view(n, 1, 1, 1, PATCH, PATCH).expand(n, c, r, k, PATCH, PATCH)
        grid = grid.permute(0, 1, 2, 4, 3, 5).reshape(n, c, r * PATCH, k * PATCH)
        a = renderer._resize(grid.float()).mul_(1.0 / 255.0).reshape(n, -1)
        for q in range(masks.shape[0]):
            out[q].append(a[:, masks[q]].cpu())
    return [torch.cat(o) for o in out]


def background_max(renderer) -> float:
    """Largest value of any resized background of the pool (eta = 1 scale), <= 1."""
    if renderer.bg_ready is not None:
        return float(renderer.bg_ready.max())
    bgs = renderer.backgrounds
    return max(float(renderer._background(bgs[i:i + 256]).max()) for i in range(0, bgs.shape[0], 256))


def check_canvas(pool, renderer) -> dict:
    """The exact check for vision canvases (see module doc)."""
    masks = interior_masks(renderer)
    sizes = masks.sum(1).tolist()
    n0 = int(pool.sizes_list[0])
    eta = float(renderer.nuisance)
    bmax = background_max(renderer) if eta > 0 and renderer.backgrounds is not None else 0.0
    t = eta * bmax + ROUNDING_MARGIN if eta > 0 else 0.0
    rec = {"method": None, "interior_pixels": [int(s) for s in sizes], "positions": len(sizes),
           "items": pool.sizes_list, "nuisance": eta}
    if min(sizes) == 0:
        rec.update(status="not established", method="interior pixels",
                   reason=f"{sum(1 for s in sizes if s == 0)} of {len(sizes)} positions have no output pixel that "
                          "depends on their patch alone at this side (each pixel mixes neighbouring digits)")
        return rec
    vals = render_interiors(renderer, pool.items, masks)
    per_pos = []
    for q, v in enumerate(vals):
        v = v.clamp(0.0, 1.0) if eta == 0 else v
        a, b = v[:n0], v[n0:]
        if eta == 0:
            per_pos.append({"colliding": _rows_collide(a.contiguous(), b.contiguous())})
        else:
            per_pos.append({"unseparated_pairs": _separated(a, b, t, stop_early=True)})
            if per_pos[-1]["unseparated_pairs"]:
                break                   # one open pair already makes the bound inconclusive
    if eta == 0:
        bad = sum(p["colliding"] for p in per_pos)
        rec.update(method="exact equality of every item's rendered interior pixels (float32, clamped) across "
                          "classes, per position", colliding_items=bad)
        rec["status"] = "holds" if bad == 0 else "fails"
        if bad:
            q = next(i for i, p in enumerate(per_pos) if p["colliding"])
            rec["reason"] = (f"{bad} class-0 item(s) render to exactly the same pixels as a class-1 item "
                             f"(first at position {q})")
        return rec
    bad = sum(p["unseparated_pairs"] for p in per_pos)
    rec.update(method=f"every cross-class pair of items differs by more than eta * max(background) + "
                      f"{ROUNDING_MARGIN:g} = {t:.6f} at some interior pixel (no background pair can make them equal)",
               background_max=bmax, threshold=t, unseparated_pairs_found=bad)
    rec["status"] = "holds" if bad == 0 else "not established"
    if bad:
        rec["reason"] = (f"at least {bad} cross-class item pairs differ by at most {t:.4f} on every interior pixel, "
                         f"so the background bound (eta {eta:g}) cannot separate them")
    return rec


def check_blocks(pool) -> dict:
    """The exact check for concatenated pool items (text): no identical rows across classes."""
    items = pool.items.reshape(len(pool), -1)
    n0 = int(pool.sizes_list[0])
    bad = _rows_collide(items[:n0].contiguous(), items[n0:].contiguous())
    rec = {"method": "exact equality of the kept pool's rows (float32, as X's blocks hold them) across classes",
           "items": pool.sizes_list, "colliding_items": bad, "status": "holds" if bad == 0 else "fails"}
    if bad:
        rec["reason"] = f"{bad} class-0 item(s) are identical to a class-1 item"
    return rec


def cached_check(kind: str, identity: dict, compute) -> dict:
    """``compute()`` cached under ``<cache>/pools`` by ``identity`` (JSON-able)."""
    from mibench.data.sources import cache_dir

    key = {"version": CHECK_VERSION, "kind": kind, "identity": identity}
    key = json.loads(json.dumps(key, sort_keys=True, default=str))
    kh = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_dir() / "pools"
    path = folder / f"truth-{kind}-{kh}.json"
    if path.is_file():
        try:
            rec = json.loads(path.read_text())
            if rec.pop("key", None) == key:
                return rec
        except (OSError, ValueError):
            pass
    rec = compute()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({**rec, "key": key}, default=str))
    os.replace(tmp, path)
    return rec


def enforce(task_name: str, checks: dict) -> tuple[dict, list[str]]:
    """(record for task_info, notes): refuse in one line when a check fails; one note per check
    that is not established; nothing when every check holds."""
    for side, rec in checks.items():
        if rec["status"] == "fails":
            raise MibenchError(f"{task_name}: the true MI needs each source's class to be a function of the rendered "
                               f"input (paper §4.3), and it is not ({side}: {rec['reason']}); refusing")
    notes = [f"{task_name}: exact decodability of the rendered input not established ({side}: {rec['reason']}); "
             "the true MI assumes each source's class is a function of it (paper §4.3)"
             for side, rec in checks.items() if rec["status"] != "holds"]
    status = "holds" if not notes else "not established"
    return {"status": status, **({"sides": checks} if len(checks) > 1 else next(iter(checks.values())))}, notes


def rendered_truth(task, identity: dict, checks: dict, **probe_kwargs):
    """(linear-probe record, exact-check record, notes) for a task's rendered input.

    ``checks`` maps a side ("x", "y") to a function computing its exact check (cached on disk by
    ``identity`` and the torch version, whose resize arithmetic it covers).  A failed check refuses
    in one line before anything else; a check that is not established prints one note line; a
    check that holds prints nothing.  The linear probe (:func:`mibench.tasks.pools.rendered_decodability`)
    is then recorded as a difficulty figure (how hard the sources are to read linearly), not as a
    condition of the truth."""
    import sys

    from mibench.tasks.pools import rendered_decodability

    ident = {**identity, "torch": torch.__version__}
    done = {side: cached_check(f"{task.name}-{side}", {**ident, "side_checked": side}, fn)
            for side, fn in checks.items()}
    truth, notes = enforce(task.name, done)
    probe = rendered_decodability(task, identity, **probe_kwargs)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return probe, truth, notes
