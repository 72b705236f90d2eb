"""Pieces both protocols use to describe a run: its setup's task parameters and MI schedule as
text, cell-name tokens, and the numbers of the leaderboard's Markdown tables."""
from __future__ import annotations

import math

#: task parameters that do not change a run's numbers (left out of setups and cell names)
IGNORED_PARAMS = {"data_dir"}
#: short names for task parameters in cell names
PARAM_ABBR = {"nuisance": "eta", "n_per_class": "npc", "layout": "L", "side": "side", "ds": "ds", "dim": "dim"}


def canonical_params(task: str, params: dict) -> str:
    """Parameters that differ from the task factory's defaults, as ``k=v;k=v`` (sorted)."""
    import inspect

    defaults = {}
    try:
        from mibench.tasks import TASKS

        sig = inspect.signature(TASKS.get(task).obj)
        defaults = {k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}
    except Exception:   # an unknown (third-party) task: keep everything
        pass
    items = []
    for k in sorted(params):
        v = params[k]
        if k in IGNORED_PARAMS or (k in defaults and _same(defaults[k], v)):
            continue
        items.append(f"{k}={_fmt_param(v)}")
    return ";".join(items)


def text_encoder_used(task_info: dict | None) -> str | None:
    """The text encoder a run's pool was embedded with (``task_info.pools.imdb.encoder``; the text and
    mixed tasks record it), or None for tasks without a text pool."""
    pools = (task_info or {}).get("pools")
    imdb = pools.get("imdb") if isinstance(pools, dict) else None
    enc = imdb.get("encoder") if isinstance(imdb, dict) else None
    name = enc.get("encoder") if isinstance(enc, dict) else enc
    return name if isinstance(name, str) and name else None


def setup_params(task: str, params: dict, task_info: dict | None) -> str:
    """A run's task parameters as its setup label: :func:`canonical_params` of the parameters it was
    given, plus the text encoder its task actually used (:func:`text_encoder_used`) where the
    parameters leave it to the default.  The default text encoder has changed (off-the-shelf MiniLM,
    then the fine-tuned ``minilm-imdb``), so a label without it would pool runs on different
    embeddings into one setup."""
    params = dict(params or {})
    used = text_encoder_used(task_info)
    if "encoder" not in params and used:
        params["encoder"] = used
    return canonical_params(task, params)


def _same(a, b) -> bool:
    try:
        return a == b or (a is not None and b is not None and float(a) == float(b))
    except (TypeError, ValueError):
        return False


def _fmt_param(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v).lower() if isinstance(v, bool) else str(v)


def schedule_label(mi) -> str:
    """An MI schedule as the leaderboard writes it: ``stepwise``, ``2``, ``2,4,6``."""
    if isinstance(mi, float):
        return f"{mi:g}"
    if isinstance(mi, (list, tuple)):
        return ",".join(f"{float(v):g}" for v in mi)
    return str(mi).replace(" ", "")


def fmt_value(v) -> str:
    if isinstance(v, bool):
        return "T" if v else "F"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def mi_token(mi) -> str:
    return "mi" + (str(mi).replace(",", "-").replace(" ", "") if not isinstance(mi, float) else f"{mi:g}")


def param_tokens(task_params: dict) -> list[str]:
    """Cell-name tokens of a cell's task parameters (``dim10``, ``eta0.5``, ``nocubic``)."""
    out = []
    for k, v in task_params.items():
        if k in IGNORED_PARAMS:
            continue
        if isinstance(v, bool):
            out.append(k if v else f"no{k}")
        else:
            out.append(f"{PARAM_ABBR.get(k, k)}{fmt_value(v)}")
    return out


def dims_text(f) -> str:
    """`` · ds=10 dr=784`` for a setup whose task reports them; empty otherwise."""
    def known(v) -> bool:
        return v is not None and not (isinstance(v, float) and math.isnan(v))

    return f" · ds={f['ds']} dr={f['dr']}" if known(f.get("ds")) or known(f.get("dr")) else ""


def truth_text(f) -> str:
    """The line under a setup's leaderboard heading where its truth check did not hold; empty otherwise."""
    flag = f.get("truth_check")
    if not isinstance(flag, str) or not flag:
        return ""
    return (f"**truth {flag}**: the exact check that each source's class is a function of the input did not "
            "prove the recorded true MI (config.json `task_info.truth_check` says why); its bias and MSE may be off.")


def fmt_num(v, digits=3) -> str:
    """A Markdown cell: the number, ``inf``, or an en dash for a missing / NaN value."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "inf" if isinstance(v, float) and math.isinf(v) else "–"
    return f"{v:.{digits}f}"


def fmt_pm(v, ci) -> str:
    """A Markdown cell: ``value ± half-width`` (the half-width left out when there is none)."""
    s = fmt_num(v)
    if ci is not None and isinstance(ci, float) and math.isfinite(ci):
        s += f" ± {ci:.3f}"
    return s


def fmt_bound(row) -> str:
    """A Markdown cell: ``lower bound`` / ``upper bound`` / ``estimate``, with ``above truth`` /
    ``below truth`` when a bound crossed the truth (leaderboard columns ``bound``, ``bound_check``)."""
    bound = row.get("bound") if isinstance(row.get("bound"), str) else ""
    check = row.get("bound_check") if isinstance(row.get("bound_check"), str) else ""
    return f"{bound} ({check}!)" if check and check != "holds" else bound


# ----------------------------------------------------------------------------------- sweep cells


def check_axis_value(fld: str, v):
    """One value of a sweep axis for config field ``fld``, checked and typed (one line if bad)."""
    import re

    from mibench.errors import MibenchError

    if fld == "critic":
        from mibench.critics import CRITICS

        return CRITICS.get(str(v)).name
    if fld == "mi":
        from mibench.protocols.schedule import parse_schedule

        if isinstance(v, bool):
            raise MibenchError(f"mi must be 'stepwise', a number or a comma list, got {v!r}")
        parse_schedule(v, 10_000)
        return float(v) if isinstance(v, (int, float)) else v   # 2 and 2.0 are the same schedule
    if fld in ("layers", "hidden", "embed", "batch_size", "steps", "burn_in"):
        if isinstance(v, str) and re.fullmatch(r"\s*\d+\s*", v):
            return int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise MibenchError(f"{fld} must be an integer, got {v!r}")
        return v
    if fld == "lr":
        try:
            return float(v)
        except (TypeError, ValueError):
            raise MibenchError(f"lr must be a number, got {v!r}") from None
    return v




def check_split(value) -> bool | int:
    """``split_estimators``: true (one cell per critic / estimator), false, or a number of groups."""
    from mibench.errors import MibenchError

    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value >= 1:
        return value
    raise MibenchError(f"split_estimators must be true, false or a number of groups >= 1, got {value!r}")


def split_groups(estimators: list, split, by_critic: bool = True) -> list[list]:
    """The estimators of one cell per group, contiguous, in (nearly) equal groups; ``True``: one
    group per unit.  With ``by_critic`` a unit is a training group (estimators sharing a critic,
    :func:`mibench.estimators.training_groups`, are never separated), else one estimator."""
    if by_critic:
        from mibench.estimators import training_groups

        units = [[estimators[e] for e in sorted(g)] for g in training_groups(estimators).values()]
    else:
        units = [[e] for e in estimators]
    n = len(units) if split is True else min(len(units), int(split or 1))
    size, extra = divmod(len(units), n)
    cells, start = [], 0
    for i in range(n):
        stop = start + size + (i < extra)
        members = [e for unit in units[start:stop] for e in unit]
        cells.append(sorted(members, key=estimators.index))
        start = stop
    return cells
