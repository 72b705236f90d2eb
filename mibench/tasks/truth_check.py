"""Exact check that the class of every source is a function of the *rendered* input.

Why (Lee & Rhee 2024 §4.3-4.4; Lee et al. 2023, Thm 3.2): I(X;Y) = H(C) per source needs an
error-free decoder of C from what the estimator sees -- that such a decoder *exists*, i.e. that C is
a function of X -- not that a particular (linear) decoder finds it on a finite sample.  C is a
function of X exactly when no two inputs that can be sampled with different classes are equal, at
the precision the estimator receives them (float32 here).  This module checks that condition
exhaustively over the pools, vectorised; a linear probe on rendered samples
(:func:`mibench.tasks.pools.rendered_decodability`) stays as a *difficulty* figure.

* **Vision canvas** (:class:`mibench.tasks.vision.Renderer`): an *interior* pixel of patch p (its resize
  weights on every other patch exactly zero) is a function of patch p alone, bit for bit; every pool item
  is rendered at every position (:func:`render_interiors`).  No nuisance: no two items of different classes
  may have equal values there.  A nuisance eta: first the bound (every cross-class pair differs by more than
  eta max(background) somewhere: :func:`_separated`), else the saturation argument
  (:func:`_saturation_check`: the pixels blank in every item tell the backgrounds apart, and under one
  background a pixel where one item is blank and the other inked differs unless the background clamps it
  to 1); backgrounds that could hide a digit are left out, by construction, and the renderer draws only
  the others.
* **Text blocks**: X is ds kept embeddings side by side, so no two kept items of different classes
  may be identical rows.

Outcomes: ``holds`` (for the kept backgrounds), ``fails`` (the task refuses in one line), ``not
established`` (recorded, one note line, flagged in leaderboards).  The arguments in full: docs/tasks.md,
"The truth is checked on what the estimator sees".
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import torch

from mibench.errors import MibenchError

CHECK_VERSION = 3
ROUNDING_MARGIN = 1e-5    # float32 rounding of a + eta * b (a few 1e-7), generously
DENSE_PIXELS = 3          # nuisance test: pixels tried densely over a block before the open pairs are listed
BLOCK = 512               # class-0 items per block
RENDER_CHUNK_BYTES = 256 << 20   # canvases (uint8 and float) rendered at once by render_interiors
INK = 1e-6                # an item value above this is ink: a + c > c in float32 for any c < 1 (ulp < 1.2e-7)
SATURATED = 1.0           # min(1, eta b) on a blank pixel: at 1 it hides any ink there (below 1 ink reads above it)
BACKGROUND_CHUNK = 512    # backgrounds scaled at once by the saturation argument


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
    bound is hopeless, e.g. eta = 1)."""
    a, b = a.float(), b.float()
    if t >= 1.0 and float(a.min()) >= 0 and float(b.min()) >= 0 and float(a.max()) <= 1 and float(b.max()) <= 1:
        return int(a.shape[0]) * int(b.shape[0])     # no difference of values in [0, 1] exceeds t
    return _open_pairs(a, b, lambda x, y: (x - y).abs() <= t, stop_early)


def _without_witness(a: torch.Tensor, b: torch.Tensor, low: float, stop_early: bool = False) -> int:
    """Number of pairs (i, j) of rows of a and b with no *witness* pixel: none where they differ by more
    than :data:`INK` and the smaller value is at most ``low`` (such a pixel stays unequal under one
    background that cannot saturate it: module docstring, argument (ii))."""
    a, b = a.float(), b.float()
    return _open_pairs(a, b, lambda x, y: (torch.minimum(x, y) > low) | ((x - y).abs() <= INK), stop_early)


def _open_pairs(a: torch.Tensor, b: torch.Tensor, still_open, stop_early: bool) -> int:
    """Number of pairs (i, j) of rows of a and b for which ``still_open(a_io, b_jo)`` (elementwise,
    broadcasting) holds at every column o; ``stop_early``: as :func:`_separated`.

    Pixels are tried from the most discriminative (class means furthest apart) down: a few densely
    over a block of pairs, then only on the pairs still open, which shrink quickly."""
    order = torch.argsort((a.mean(0) - b.mean(0)).abs(), descending=True)
    at, bt = a[:, order].T.contiguous(), b[:, order].T.contiguous()      # (pixels, items)
    d = at.shape[0]
    dense = min(DENSE_PIXELS, d)
    bad = 0
    for s in range(0, a.shape[0], BLOCK):
        blk = at[:dense, s:s + BLOCK]
        open_ = still_open(blk[0, :, None], bt[0, None, :])
        for o in range(1, dense):
            open_ &= still_open(blk[o, :, None], bt[o, None, :])
        i, j = open_.nonzero(as_tuple=True)
        i = i + s
        for o in range(dense, d):
            if i.numel() == 0:
                break
            keep = still_open(at[o, i], bt[o, j])
            i, j = i[keep], j[keep]
        bad += int(i.numel())
        if stop_early and bad:
            break
    return bad


def _fewest_witnesses(a: torch.Tensor, b: torch.Tensor) -> int:
    """min over pairs (i, j) of rows of a and b of the pixels where one of the two is exactly 0 and the
    other inked (> :data:`INK`): pixels only a saturated background can make equal.  Counted as one
    matrix product of 0/1 indicators per block (exact: integer sums far below 2^24)."""
    left = torch.cat([(a == 0).float(), (a > INK).float()], 1)
    right = torch.cat([(b > INK).float(), (b == 0).float()], 1)
    if left.shape[0] == 0 or right.shape[0] == 0:
        return 0
    return int(min(float((left[s:s + 4 * BLOCK] @ right.T).min()) for s in range(0, left.shape[0], 4 * BLOCK)))


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


def scaled_backgrounds(renderer):
    """Chunks (float32 (k, channels * side * side), in the pool's order) of min(1, eta b) for every background
    of the renderer, with the renderer's arithmetic: what a pixel blank in the digits (value exactly 0) reads."""
    bgs, c, side = renderer.backgrounds, renderer.channels, renderer.side
    for s in range(0, bgs.shape[0], BACKGROUND_CHUNK):
        if renderer.bg_ready is not None:
            bg = renderer.bg_ready[s:s + BACKGROUND_CHUNK]
        else:
            bg = renderer._background(bgs[s:s + BACKGROUND_CHUNK])
        bg = bg.expand(bg.shape[0], c, side, side)
        blank = torch.zeros(bg.shape, device=bg.device).add_(bg, alpha=renderer.nuisance)
        yield blank.clamp_(0.0, 1.0).reshape(bg.shape[0], -1)


def _first_of_each(rows: torch.Tensor) -> torch.Tensor:
    """bool (n,): row i is the first of the rows byte-equal to it."""
    _, inverse = torch.unique(rows, dim=0, return_inverse=True)
    first = torch.full((int(inverse.max()) + 1,), rows.shape[0], dtype=torch.long)
    first.scatter_reduce_(0, inverse, torch.arange(rows.shape[0]), reduce="amin")
    keep = torch.zeros(rows.shape[0], dtype=torch.bool)
    keep[first] = True
    return keep


def _saturation_check(renderer, masks: torch.Tensor, vals: list, n0: int) -> dict:
    """The saturation argument of the module docstring: (status, the backgrounds it excludes, what it
    found).  ``vals``: each position's interior values of every pool item (class 0 first, ``n0`` of them)."""
    pixels = [m.nonzero().squeeze(1).cpu() for m in masks.cpu()]
    blank = torch.cat([p[(v == 0).all(0)] for p, v in zip(pixels, vals)])     # blank in every item, every position
    rec = {"method": "saturation argument", "blank_pixels": int(blank.numel())}
    if blank.numel() == 0:
        return {**rec, "status": "not established",
                "reason": "no interior pixel is blank in every pool item, so two backgrounds cannot be told apart "
                          "whatever the digits"}
    at_blank, saturated, brightest = [], [], []
    for c in scaled_backgrounds(renderer):
        c = c.cpu()
        at_blank.append(c[:, blank])
        saturated.append(torch.stack([(c[:, p] >= SATURATED).sum(1) for p in pixels], 1))
        brightest.append(torch.stack([c[:, p].max(1).values for p in pixels], 1).max(1).values)
    keep = _first_of_each(torch.cat(at_blank))          # (i): one background per reading of the blank pixels
    saturated, brightest = torch.cat(saturated), torch.cat(brightest)
    rec.update(backgrounds=int(keep.numel()), identical_on_blank_pixels=int((~keep).sum()))
    top = float(brightest[keep].max())
    if top < SATURATED:                                 # (ii) where no kept background saturates
        low = 1.0 - top - 2e-6
        open_ = next((n for n in (_without_witness(v[:n0], v[n0:], low, stop_early=True) for v in vals) if n), 0)
        rec.update(background_max=top, witness_at_most=low)
        if open_ == 0:
            return {**rec, "status": "holds", "excluded": (~keep).nonzero().squeeze(1).tolist(),
                    "witness": f"every cross-class pair differs by more than {INK:g} at an interior pixel where the "
                               f"smaller value is at most {low:.6f}, which no kept background can saturate"}
        return {**rec, "status": "not established",
                "reason": f"at least {open_} cross-class item pairs have no interior pixel where the smaller value is "
                          f"at most {low:.4f} and they differ"}
    fewest = [_fewest_witnesses(v[:n0], v[n0:]) for v in vals]
    rec["fewest_witness_pixels"] = fewest
    if min(fewest) == 0:
        return {**rec, "status": "not established",
                "reason": f"a cross-class item pair at position {fewest.index(0)} has no interior pixel where one is "
                          "blank and the other inked, so a saturating background could make them equal"}
    bright = (saturated >= torch.tensor(fewest)).any(1)
    excluded = ~keep | bright
    rec["saturating_backgrounds"] = int((bright & keep).sum())
    if bool(excluded.all()):
        return {**rec, "status": "not established", "reason": "every background saturates too many interior pixels"}
    return {**rec, "status": "holds", "excluded": excluded.nonzero().squeeze(1).tolist(),
            "witness": "every cross-class pair has more pixels where one is blank and the other inked than a kept "
                       "background saturates at that position"}


def check_canvas(pool, renderer) -> dict:
    """The exact check for vision canvases (see module doc).  With a nuisance, a record that holds by the
    saturation argument lists the backgrounds it leaves out (``excluded_backgrounds``, indices into the
    renderer's pool): the renderer must draw only the others (:func:`canvas_truth`)."""
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
    if eta == 0:
        return _exact_equality(rec, vals, n0)
    bad = next((n for n in (_separated(v[:n0], v[n0:], t, stop_early=True) for v in vals) if n), 0)
    rec.update(method=f"every cross-class pair of items differs by more than eta * max(background) + "
                      f"{ROUNDING_MARGIN:g} = {t:.6f} at some interior pixel (no background pair can make them equal)",
               background_max=bmax, threshold=t, unseparated_pairs_found=bad, backgrounds_excluded=0)
    rec["status"] = "holds" if bad == 0 else "not established"
    if not bad:
        return rec
    bound = (f"at least {bad} cross-class item pairs differ by at most {t:.4f} on every interior pixel, so the "
             f"background bound (eta {eta:g}) cannot separate them")
    sat = _saturation_check(renderer, masks, vals, n0)
    excluded = sat.pop("excluded", [])
    rec.update(bound=bound, saturation=sat, status=sat["status"], backgrounds_excluded=len(excluded),
               excluded_backgrounds=excluded)
    if sat["status"] == "holds":
        rec["method"] = (f"saturation argument (module mibench.tasks.truth_check): {sat['witness']}; "
                         f"{len(excluded)} of {sat['backgrounds']} backgrounds left out")
    else:
        rec["reason"] = f"{bound}, and the saturation argument does not apply ({sat['reason']})"
    return rec


def _exact_equality(rec: dict, vals: list, n0: int) -> dict:
    """No nuisance: no two items of different classes may render to the same clamped interior pixels."""
    per_pos = [_rows_collide(v[:n0].clamp(0.0, 1.0).contiguous(), v[n0:].clamp(0.0, 1.0).contiguous()) for v in vals]
    bad = sum(per_pos)
    rec.update(method="exact equality of every item's rendered interior pixels (float32, clamped) across "
                      "classes, per position", colliding_items=bad)
    rec["status"] = "holds" if bad == 0 else "fails"
    if bad:
        q = next(i for i, n in enumerate(per_pos) if n)
        rec["reason"] = (f"{bad} class-0 item(s) render to exactly the same pixels as a class-1 item "
                         f"(first at position {q})")
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
    that is not established, and one per check that holds only with backgrounds left out; nothing
    when every check holds as it is."""
    for side, rec in checks.items():
        if rec["status"] == "fails":
            raise MibenchError(f"{task_name}: the true MI needs each source's class to be a function of the rendered "
                               f"input (paper §4.3), and it is not ({side}: {rec['reason']}); refusing")
    notes = [f"{task_name}: exact decodability of the rendered input not established ({side}: {rec['reason']}); "
             "the true MI assumes each source's class is a function of it (paper §4.3)"
             for side, rec in checks.items() if rec["status"] != "holds"]
    status = "holds" if not notes else "not established"
    for side, rec in checks.items():
        if rec["status"] == "holds" and rec.get("backgrounds_excluded"):
            sat = rec["saturation"]
            notes.append(f"{task_name}: {rec['backgrounds_excluded']} of {sat['backgrounds']} nuisance backgrounds "
                         f"left out ({side}: {sat.get('saturating_backgrounds', 0)} "
                         f"bright enough to white out a digit, {sat['identical_on_blank_pixels']} identical to another "
                         "where every digit is blank), so that each source's class is a function of the canvas")
    return {"status": status, **({"sides": checks} if len(checks) > 1 else next(iter(checks.values())))}, notes


def side_check(task_name: str, identity: dict, side: str, compute) -> dict:
    """``compute()``, the exact check of one side of a task's input, cached on disk by ``identity`` and the
    torch version (whose resize arithmetic it covers)."""
    return cached_check(f"{task_name}-{side}", {**identity, "torch": torch.__version__, "side_checked": side}, compute)


def canvas_truth(task_name: str, identity: dict, pool, renderer) -> dict:
    """:func:`check_canvas` of a task's canvas side ("x"), cached; where it holds by leaving backgrounds
    out, ``renderer`` draws only the others from now on (by construction, before anything is sampled).
    Returns the record without the list of indices."""
    rec = dict(side_check(task_name, identity, "x", lambda: check_canvas(pool, renderer)))
    excluded = rec.pop("excluded_backgrounds", None) or []
    if rec["status"] == "holds" and excluded:
        renderer.leave_out_backgrounds(excluded)
    return rec


def rendered_truth(task, identity: dict, checks: dict, **probe_kwargs):
    """(linear-probe record, exact-check record, notes) for a task's rendered input.

    ``checks`` maps a side ("x", "y") to its exact check's record, or to a function computing it (cached by
    :func:`side_check`).  A failed check refuses in one line before anything else; a check that is not
    established, or holds only with backgrounds left out, prints one note line; a check that holds prints
    nothing.  The linear probe (:func:`mibench.tasks.pools.rendered_decodability`) is then recorded as a
    difficulty figure (how hard the sources are to read linearly), not as a condition of the truth."""
    import sys

    from mibench.tasks.pools import rendered_decodability

    done = {side: fn if isinstance(fn, dict) else side_check(task.name, identity, side, fn)
            for side, fn in checks.items()}
    truth, notes = enforce(task.name, done)
    probe = rendered_decodability(task, identity, **probe_kwargs)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return probe, truth, notes
