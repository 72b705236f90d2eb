"""The regression gate: ``compare(new, baseline)`` (``mibench compare``).

``compare(new, baseline)`` matches rows on (setup, estimator, true_mi) and flags:

* ``missing``: a baseline row has no counterpart in NEW;
* ``diverged``: NEW has more diverged seeds than the baseline (or a NaN MSE where the baseline
  had a number);
* ``mse``: ``new.mse > base.mse * (1 + tolerance) + mse_floor``;
* ``bias``: ``new.abs_bias > base.abs_bias * (1 + tolerance) + bias_floor``.

Defaults: ``tolerance = 0.25`` (relative), ``mse_floor = 0.05`` bits^2, ``bias_floor = 0.1`` bits;
the floors keep tiny baselines (e.g. 0.001 bits^2) from failing on noise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mibench.analysis.leaderboard import ROW_KEY, load
from mibench.errors import MibenchError, UnreadableInput


@dataclass
class Finding:
    kind: str          # missing | diverged | seeds | mse | bias
    key: dict
    baseline: float | None = None
    new: float | None = None
    detail: str = ""

    def label(self) -> str:
        """The row in words: every field of its setup that can tell it from another row (the schedule, the
        learning rate; burn-in, embedding width and precision where they are set)."""
        k = self.key
        params = f"[{k['task_params']}]" if k.get("task_params") else ""
        if str(k.get("protocol")) == "sample":      # a sample run has no critic or steps of its own
            how = f"n {k['n']}" + "".join(f" {name} {k[name]}" for name in ("layers", "hidden", "batch_size", "steps")
                                          if _set(k.get(name)))
        else:
            how = f"{k['critic']} {k['layers']}x{k['hidden']} b{k['batch_size']} {k['steps']} steps"
        if _set(k.get("lr")):
            how += f" lr {float(k['lr']):g}"
        for name, word in (("burn_in", "burn-in"), ("embed", "embed")):
            if _set(k.get(name)):
                how += f" {word} {k[name]}"
        if k.get("precision") not in (None, "", "fp32"):
            how += f" {k['precision']}"
        return f"{k['task']}{params} {k['estimator']} {how}, schedule {k.get('schedule')} bits @ {k['true_mi']:g} bits"


def _set(value) -> bool:
    """A setup number that was set (not 0, empty or NaN)."""
    try:
        return bool(value) and float(value) == float(value) and float(value) != 0
    except (TypeError, ValueError):
        return False


@dataclass
class CompareReport:
    regressions: list
    improvements: list
    matched: int
    new_only: int
    settings: dict

    @property
    def ok(self) -> bool:
        return not self.regressions

    def format(self) -> str:
        s = self.settings
        lines = [f"compared {self.matched} rows (tolerance {s['tolerance']:.0%} relative, floors: MSE "
                 f"{s['mse_floor']:g} bits², |bias| {s['bias_floor']:g} bits; gated: {', '.join(s['metrics'])})"]
        if self.regressions:
            lines.append(f"{len(self.regressions)} regression(s):")
            for f in self.regressions:
                lines.append(f"  WORSE {f.kind:<8} {f.label()}: {f.detail}")
        else:
            lines.append("no regressions")
        if self.improvements:
            lines.append(f"{len(self.improvements)} row(s) improved beyond the tolerance:")
            for f in self.improvements[:20]:
                lines.append(f"  better {f.kind:<7} {f.label()}: {f.detail}")
            if len(self.improvements) > 20:
                lines.append(f"  ... and {len(self.improvements) - 20} more")
        if self.new_only:
            lines.append(f"{self.new_only} row(s) only in NEW (not gated)")
        return "\n".join(lines)


def compare(new, baseline, tolerance: float = 0.25, mse_floor: float = 0.05, bias_floor: float = 0.1,
            metrics=("mse", "bias"), allow_missing: bool = False) -> CompareReport:
    """Regression check of ``new`` against ``baseline``; see the module docstring for the rules.

    Parameters
    ----------
    new, baseline : each a leaderboard CSV path, a DataFrame, or run / sweep directories (aggregated
        on the fly).  An empty baseline is refused (:class:`~mibench.errors.UnreadableInput`): a gate
        with nothing to compare passes vacuously.
    tolerance : relative slack on MSE and |bias|.
    mse_floor, bias_floor : absolute slack (bits², bits), so tiny baselines do not fail on noise.
        Each must be a finite number >= 0 (NaN or inf would let every row pass): one line otherwise.
    metrics : what is gated: ``"mse"``, ``"bias"`` or both.
    allow_missing : rows of the baseline missing from NEW are not regressions.
    """
    import pandas as pd

    for flag, value in (("--tolerance", tolerance), ("--mse-floor", mse_floor), ("--bias-floor", bias_floor)):
        # NaN compares false and inf makes every limit inf: either would pass every regression; a string
        # shows its quotes (from Python, tolerance="0.25" is not a number)
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                and value >= 0):
            raise MibenchError(f"{flag} must be a finite number >= 0, got {value!r}")
    metrics = tuple(m.strip().lower() for m in (metrics.split(",") if isinstance(metrics, str) else metrics))
    if not any(metrics):
        raise MibenchError("--metrics takes mse and/or bias, got none: a gate on no metric passes any change of the "
                           "numbers")
    for m in metrics:
        if m not in ("mse", "bias"):
            raise MibenchError(f"--metrics takes mse and/or bias, got {m!r}")
    n = new if isinstance(new, pd.DataFrame) else load(new)
    b = baseline if isinstance(baseline, pd.DataFrame) else load(baseline)
    if b.empty:
        raise UnreadableInput(f"the baseline {baseline if not isinstance(baseline, pd.DataFrame) else ''} has no rows: "
                              "a gate against nothing cannot fail, so it is refused")
    n, b = _keyed(n), _keyed(b)
    regressions, improvements = [], []
    for key, br in b.items():
        kd = dict(zip(ROW_KEY, key))
        nr = n.get(key)
        if nr is None:
            if not allow_missing:
                regressions.append(Finding("missing", kd, detail="in the baseline but not in NEW" + _nearest(key, n)))
            continue
        bdiv, ndiv = br["diverged_seeds"], nr["diverged_seeds"]
        bm, nm = float(br["mse"]), float(nr["mse"])
        if ndiv > bdiv or (np.isfinite(bm) and not np.isfinite(nm)):
            why = f"diverged seeds {bdiv} -> {ndiv}" + ("" if np.isfinite(nm) else f", MSE is {nm}")
            regressions.append(Finding("diverged", kd, bdiv, ndiv, why))
            continue
        bseeds, nseeds = (int(r["n_seeds"]) if pd.notna(r.get("n_seeds")) else 0 for r in (br, nr))
        if 0 < nseeds < bseeds:     # seeds that never ran would otherwise pass as the same measurement
            regressions.append(Finding("seeds", kd, bseeds, nseeds, f"seeds {bseeds} -> {nseeds}: fewer than the "
                                                                     "baseline's, not the same measurement"))
            continue
        checks = []
        if "mse" in metrics:
            checks.append(("mse", bm, nm, mse_floor, "MSE", "bits²"))
        if "bias" in metrics:
            checks.append(("bias", float(br["abs_bias"]), float(nr["abs_bias"]), bias_floor, "|bias|", "bits"))
        for kind, bv, nv, floor, name, unit in checks:
            if not (np.isfinite(bv) and np.isfinite(nv)):
                continue
            limit = bv * (1 + tolerance) + floor
            detail = f"{name} {bv:.4g} -> {nv:.4g} {unit} ({_rel(bv, nv)}; limit {limit:.4g})"
            if nv > limit:
                regressions.append(Finding(kind, kd, bv, nv, detail))
            elif nv < (bv - floor) / (1 + tolerance):
                improvements.append(Finding(kind, kd, bv, nv, f"{name} {bv:.4g} -> {nv:.4g} {unit} ({_rel(bv, nv)})"))
    new_only = sum(1 for k in n if k not in b)
    if allow_missing and not any(k in n for k in b):
        # nothing would be gated at all: the same vacuous pass as an empty baseline (without
        # --allow-missing every baseline row is a regression, listed with the nearest row of NEW)
        raise UnreadableInput(f"NEW has none of the baseline's {len(b)} rows ({new_only} rows only in NEW): "
                              "a gate that compares nothing cannot fail, so it is refused")
    settings = {"tolerance": tolerance, "mse_floor": mse_floor, "bias_floor": bias_floor, "metrics": list(metrics)}
    return CompareReport(regressions, improvements, sum(1 for k in b if k in n), new_only, settings)


def _rel(b, n) -> str:
    if b == 0:
        return "was 0"
    return f"{(n - b) / abs(b):+.0%}"


def _nearest(key: tuple, rows: dict) -> str:
    """Where NEW has the same task, estimator and level under another setup: which fields differ (the label
    shows only some of the key, so a missing row and a row only in NEW could print alike)."""
    same = [i for i, c in enumerate(ROW_KEY) if c in ("task", "task_params", "estimator", "true_mi")]
    for other in rows:
        if all(other[i] == key[i] for i in same):
            diff = [f"{c} {key[i]} -> {other[i]}" for i, c in enumerate(ROW_KEY) if other[i] != key[i]]
            return f" (NEW has it with {', '.join(diff)})"
    return ""


#: the columns the gate reads from a leaderboard
GATE_COLUMNS = [*ROW_KEY, "mse", "abs_bias", "diverged_seeds"]


def _keyed(df) -> dict:
    missing = [c for c in GATE_COLUMNS if c not in df.columns]
    if missing:
        raise UnreadableInput(f"a leaderboard without the columns {', '.join(missing)} cannot be gated")
    out = {}
    for _, r in df.iterrows():
        key = tuple(_norm_key(c, r[c]) for c in ROW_KEY)
        mse, bias = float(r["mse"]), float(r["abs_bias"])
        diverged = _norm_key("diverged_seeds", r["diverged_seeds"])
        # an MSE or |bias| that no set of estimates can have is a damaged file, not a result to gate; a
        # missing MSE (every seed failed) comes with the failed seeds counted in diverged_seeds
        if (mse < 0 or bias < 0 or mse == math.inf or (math.isfinite(mse) and not math.isfinite(bias))
                or (not math.isfinite(mse) and diverged == 0) or diverged < 0):
            raise UnreadableInput(f"a leaderboard row ({' '.join(map(str, key))}) has MSE {mse}, |bias| {bias} and "
                                  f"{diverged} diverged seeds: not a possible result (a damaged or edited file)")
        out[key] = {**r.to_dict(), "diverged_seeds": diverged}
    return out


def _norm_key(col, v):
    if col in ("layers", "hidden", "embed", "batch_size", "steps", "burn_in", "n", "diverged_seeds"):
        try:
            return int(v)
        except (TypeError, ValueError):
            raise UnreadableInput(f"a leaderboard row has {col} = {v!r}, not an integer (damaged file)") from None
    if col in ("lr", "true_mi"):
        return round(float(v), 9)
    if col == "task_params":
        return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    return str(v)
