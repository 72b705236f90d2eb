"""``mibench report``: a static, self-contained leaderboard page.

``write_site(paths, out)`` writes ``out/index.html`` (a Jinja2 template, autoescaped) next to
``assets/`` (the page's CSS and script, and the vendored table-sorting library, tablesort, MIT),
``figures/<setup>/`` (PNG), ``leaderboard.csv`` (the table of every setup) and ``repro/`` (each
sweep's recorded spec as YAML).  No server and no network: every link is relative, so the
directory opens from disk and can be published as it is.
"""
from __future__ import annotations

import json
import math
import shutil
import tempfile
from pathlib import Path

from mibench.errors import MibenchError
from mibench.records import CONFIG, MANIFEST
from mibench.records.io import float_or_nan

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
ASSETS = HERE / "assets"

#: table columns: (leaderboard column or derived key, heading, numeric?, has a 95% CI column)
COLUMNS = [
    ("rank", "rank", True, False),
    ("estimator", "estimator", False, False),
    ("kind", "kind", False, False),
    ("true_mi", "true MI (bits)", True, False),
    ("mean_estimate", "mean estimate (bits)", True, True),
    ("bias", "bias (bits)", True, True),
    ("variance", "variance (bits²)", True, True),
    ("mse", "MSE (bits²)", True, True),
    ("rank_score", "rank score", True, False),
    ("n_seeds", "seeds", True, False),
    ("seconds", "s / estimate", True, False),
    ("n_parameters", "parameters", True, False),
    ("status", "status", False, False),
]


#: columns shown as whole numbers
INTEGER_COLUMNS = {"rank", "n_seeds", "n_parameters"}


def fmt_number(v, integer: bool = False) -> str:
    x = float_or_nan(v)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if integer:
        return f"{int(round(x)):,}"
    if x == 0:
        return "0"
    return f"{x:.3g}" if abs(x) >= 1e4 or abs(x) < 1e-3 else f"{x:.3f}"


def sort_key(v) -> str:
    """The ``data-sort`` value of a numeric cell: a number JavaScript's parseFloat reads exactly
    (``Infinity`` included); empty for a missing value (sorted below every number)."""
    x = float_or_nan(v)
    if math.isnan(x):
        return ""
    return ("Infinity" if x > 0 else "-Infinity") if math.isinf(x) else repr(x)


def status_text(row: dict) -> str:
    n = int(float_or_nan(row.get("n_seeds")) or 0)
    k = int(float_or_nan(row.get("diverged_seeds")) or 0)
    parts = []
    if k:
        from mibench.protocols import get_protocol

        what = get_protocol(str(row.get("protocol") or "stream")).failure_word
        parts.append(f"{what} in {k} of {n} seed{'s' if n != 1 else ''}")
    mi_status = str(row.get("mi_status") or "")
    if mi_status:
        parts.append(", ".join(p.replace(":", " ×") for p in mi_status.split(";") if p))
    return "; ".join(parts) or "ok"


def columns_for(setup) -> list[tuple]:
    """The table columns of a setup (those its protocol leaves empty are not shown)."""
    return [c for c in COLUMNS if c[0] not in setup.protocol.empty_columns]


def table_rows(setup) -> list[list[dict]]:
    """Cells of a setup's table: ``text`` (shown), ``sort`` (numeric cells' data-sort), ``ci``."""
    out = []
    for r in setup.rows:
        cells = []
        for key, _, numeric, has_ci in columns_for(setup):
            value = status_text(r) if key == "status" else r.get(key)
            if numeric:
                ci = float_or_nan(r.get(f"{key}_ci95")) if has_ci else float("nan")
                cells.append({"text": fmt_number(value, key in INTEGER_COLUMNS), "sort": sort_key(value),
                              "ci": "" if math.isnan(ci) else f"± {fmt_number(ci)}"})
            else:
                cells.append({"text": "" if value is None else str(value), "sort": None, "ci": ""})
        out.append(cells)
    return out


def _environment(runs) -> list[tuple[str, str]]:
    """A few facts common to (or ranges over) the runs' config.json."""
    def values(get):
        vals = []
        for _, cfg in runs:
            try:
                v = get(cfg)
            except (KeyError, TypeError, AttributeError):
                continue
            if v not in (None, "") and str(v) not in vals:
                vals.append(str(v))
        return ", ".join(vals)

    facts = [("mibench", values(lambda c: c["environment"]["mibench"])),
             ("torch", values(lambda c: c["environment"]["torch"])),
             ("python", values(lambda c: c["environment"]["python"])),
             ("device", values(lambda c: c["environment"].get("device_name") or c["environment"]["device"])),
             ("torch threads per run", values(lambda c: c["environment"]["torch_threads"]))]
    walls = [float(c.get("wall_seconds")) for _, c in runs if isinstance(c.get("wall_seconds"), (int, float))]
    if walls:
        facts.append(("wall seconds summed over runs", f"{sum(walls):,.0f} s"))
    return [(k, v) for k, v in facts if v]


def _run_rows(runs) -> list[dict]:
    rows = []
    for shown, cfg in runs:
        from mibench.protocols import protocol_of

        c = cfg.get("config") or {}
        seeds = protocol_of(cfg).seeds_of(cfg)
        wall = float_or_nan(cfg.get("wall_seconds"))
        rows.append({"dir": shown, "status": cfg.get("status", ""), "task": c.get("task", ""),
                     "estimators": ", ".join(map(str, c.get("estimators") or [])),
                     "seeds": ", ".join(map(str, seeds or [])), "started": cfg.get("started", ""),
                     "wall": "—" if math.isnan(wall) else f"{wall:,.0f}", "wall_sort": sort_key(wall)})
    return rows


def excluded_line(statuses) -> str:
    """One line for the runs below the given directories that are not complete (their statuses):
    what the ranking leaves out, as ``mibench leaderboard`` notes it.  Empty when there are none."""
    statuses = list(statuses)
    if not statuses:
        return ""
    counts: dict[str, int] = {}
    for st in statuses:
        counts[st] = counts.get(st, 0) + 1
    runs = f"{len(statuses)} run{'s' if len(statuses) != 1 else ''}"
    if len(counts) == 1:
        return f"{runs} {statuses[0]}, excluded from the ranking"
    what = ", ".join(f"{v} {k}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{runs} not complete ({what}), excluded from the ranking"


def _meta_facts(meta: dict | None) -> list[tuple[str, str]]:
    if not meta:
        return []
    keys = [("generated", "leaderboard generated"), ("mibench", "mibench"), ("runs", "runs"),
            ("seeds", "seeds"), ("steps", "steps"), ("sample_protocol_n", "sample protocol n"),
            ("schedules", "MI schedules"), ("devices", "devices"), ("torch", "torch"),
            ("torch_threads", "torch threads"), ("data_sources", "data"),
            ("train_wall_seconds_total", "training wall seconds (summed)")]
    out = []
    for k, label in keys:
        v = meta.get(k)
        if v in (None, "", []):
            continue
        out.append((label, ", ".join(map(str, v)) if isinstance(v, list) else str(v)))
    return out


def _sweeps(source, site: Path, taken: set) -> list[dict]:
    """Per sweep manifest: its facts, the recorded commands and its spec written as YAML."""
    import yaml

    out = []
    for shown, m in source.manifests:
        spec = m.get("spec")
        spec_file = None
        pins = _pins([cfg for run, cfg in source.runs if run.startswith(shown.rstrip("/") + "/")])
        if isinstance(spec, dict) and pins:
            spec = json.loads(json.dumps(spec))
            for t in spec.get("tasks") or []:
                if isinstance(t, dict) and t.get("task") in pins:
                    t["params"] = {**(t.get("params") or {}), **pins[t["task"]]}
        if isinstance(spec, dict):
            stem = _unique("".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in str(m.get("name") or "sweep")),
                           taken)
            spec_file = f"repro/{stem}.yaml"
            (site / "repro").mkdir(parents=True, exist_ok=True)
            note = "".join(f"# {task}: {', '.join(f'{k} = {v!r}' for k, v in p.items())} set here: the runs used "
                           "it (their task_info) and it is no longer the default\n" for task, p in pins.items())
            (site / spec_file).write_text(f"# the spec recorded in {shown}/sweep.json\n{note}"
                                          + yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=100))
        invocations = m.get("invocations") or []
        commands = [i["command"] for i in invocations if i.get("command")]
        if not commands and m.get("command"):
            commands = [m["command"]]
        first = invocations[0] if invocations else m
        # from the page's folder, where the spec file is, into a folder of its own (the sweep's --out holds the
        # complete sweep, which refuses a second run of it without --resume)
        rerun = f"mibench sweep {spec_file} --out rerun/{Path(spec_file).stem}" if spec_file else None
        if rerun and first.get("workers"):
            rerun += f" --workers {first['workers']}"
        if rerun and first.get("threads_per_worker"):
            rerun += f" --threads {first['threads_per_worker']}"
        walls = [float(i["wall_seconds"]) for i in invocations if isinstance(i.get("wall_seconds"), (int, float))]
        facts = [("name", m.get("name")), ("description", (spec or {}).get("description")),
                 ("status", m.get("status")), ("created", m.get("created")), ("updated", m.get("updated")),
                 ("backend", m.get("backend")),
                 ("workers × threads", f"{m.get('workers')} × {m.get('threads_per_worker')}"),
                 ("wall time", f"{sum(walls):,.0f} s" if walls else None),
                 ("cells", ", ".join(f"{k} {v}" for k, v in (m.get("counts") or {}).items()))]
        out.append({"dir": shown, "facts": [(k, str(v)) for k, v in facts if v not in (None, "")],
                    "commands": commands, "spec_file": spec_file, "rerun": rerun,
                    "pins": [f"{task} {k} = {v}" for task, p in pins.items() for k, v in p.items()]})
    return out


def _pins(configs) -> dict:
    """{task: {param: value}} of :func:`mibench.report.reading.pinned_params` over runs."""
    from mibench.report.reading import pinned_params

    out: dict = {}
    for cfg in configs:
        p = pinned_params(cfg)
        if p:
            out.setdefault((cfg.get("config") or {}).get("task"), {}).update(p)
    return out


def _rerun_flags(cfg: dict) -> str:
    from mibench.report.reading import pinned_params

    return "".join(f" --{k.replace('_', '-')} {v}" for k, v in pinned_params(cfg).items())


def _unique(stem: str, taken: set) -> str:
    name, i = stem or "sweep", 2
    while name in taken:
        name, i = f"{stem}-{i}", i + 1
    taken.add(name)
    return name


#: the self-consistency table's columns: (consistency.csv column, heading, numeric?, its interval column)
CONSISTENCY_COLUMNS = [("dataset", "dataset", False, None), ("estimator", "estimator", False, None),
                       ("critic", "critic", False, None), ("zero", "I(t=0) (bits)", True, "zero_ci95"),
                       ("top", "I(t=H) (bits)", True, None), ("violations", "baseline violations", True, None),
                       ("dp_ratio", "DP ratio (≈ 1)", True, "dp_ratio_ci95"),
                       ("add_ratio", "additivity ratio (≈ 2)", True, "add_ratio_ci95"),
                       ("passes", "passes", False, None),
                       ("n_seeds", "seeds", True, None), ("wall_seconds", "wall s", True, None)]


def consistency_tables(paths, shown) -> list[dict]:
    """The self-consistency tables under ``paths`` (:func:`mibench.analysis.consistency.read_tables`) as
    cells; ``shown``: the paths as the page names them."""
    from mibench.analysis.consistency import read_tables
    from mibench.report.reading import _shown

    names = {str(p): s for p, s in zip(paths, shown)}
    out = []
    for t in read_tables(paths):
        rows = []
        for r in t["rows"]:
            cells = []
            for key, _, numeric, ci_key in CONSISTENCY_COLUMNS:
                if not numeric:
                    cells.append({"text": r.get(key) or "—", "sort": None})
                    continue
                text = fmt_number(r.get(key), key in ("violations", "n_seeds", "wall_seconds"))
                ci = float_or_nan(r.get(ci_key)) if ci_key else float("nan")
                cells.append({"text": text + ("" if math.isnan(ci) else f" ± {fmt_number(ci)}"),
                              "sort": sort_key(r.get(key))})
            rows.append(cells)
        out.append({"dir": _shown(t["dir"], t["source"], names[str(t["source"])]), "header": t["header"],
                    "rows": rows, "commands": t["commands"],
                    "columns": [{"heading": h, "numeric": n} for _, h, n, _ in CONSISTENCY_COLUMNS]})
    return out


FAMILY_COLUMNS = [("rank", "rank", True), ("estimator", "estimator", False), ("kind", "kind", False),
                  ("bound", "bound", False), ("cells", "cells", True), ("failed_cells", "failed", True),
                  ("mae_bits", "MAE (bits)", True), ("mean_bias_bits", "bias (bits)", True),
                  ("seconds", "s / estimate", True)]


def families_context(board, site: Path) -> dict | None:
    """The per-family ranking, the heatmap and the outliers (:mod:`mibench.analysis.reference`) where the
    sample-protocol rows span at least two data families; None otherwise."""
    from mibench.analysis import reference

    sample = board[board["protocol"] == "sample"] if "protocol" in board else board
    if sample.empty:
        return None
    table = reference.family_table(sample)
    if table["family"].nunique() < 2:
        return None
    (site / "figures").mkdir(parents=True, exist_ok=True)
    reference.heatmap(sample, site / "figures" / "heatmap.png")
    tables = []
    for family in reference.FAMILIES:
        g = table[table["family"] == family].sort_values("rank")
        if g.empty:
            continue
        rows = [[{"text": fmt_number(r[k], integer=k in ("rank", "cells", "failed_cells")) if numeric else str(r[k]),
                  "sort": sort_key(r[k]) if numeric else None} for k, _, numeric in FAMILY_COLUMNS]
                for _, r in g.iterrows()]
        tables.append({"family": family, "rows": rows})
    return {"names": [t["family"] for t in tables], "heatmap": "figures/heatmap.png", "tables": tables,
            "columns": [{"heading": h, "numeric": n} for _, h, n in FAMILY_COLUMNS],
            "outliers": reference.outliers(sample).to_dict("records")}


def build_context(results, site: Path, command: str, title: str, figures: bool = True) -> dict:
    from mibench._version import __version__
    from mibench.report.figures import metrics_figure, run_figures

    setups = []
    for s in results.setups:
        if figures:
            s.figures = [metrics_figure(s, site)] + run_figures(s, site)
        shown_fields = s.protocol.shown_setup_fields(s.fields)
        setups.append({"slug": s.slug, "label": s.label, "fields": shown_fields, "protocol": s.protocol.name,
                       "n_rows": len(s.rows), "n_estimators": len({r["estimator"] for r in s.rows}),
                       "rows": table_rows(s), "figures": s.figures,
                       "columns": [{"key": k, "heading": h, "numeric": n} for k, h, n, _ in columns_for(s)],
                       "best": s.rows[0]["estimator"] if s.rows else ""})
    taken: set = set()
    sources = []
    for src in results.sources:
        sources.append({"shown": src.shown, "meta": _meta_facts(src.meta),
                        "leaderboard_command": (src.meta or {}).get("command"),
                        "environment": _environment(src.runs), "runs": _run_rows(src.runs),
                        "sweeps": _sweeps(src, site, taken),
                        "excluded": excluded_line(st for _, st in src.incomplete),
                        "incomplete": [{"dir": shown, "status": st} for shown, st in src.incomplete],
                        "loose_runs": [f"{shown}/config.json{_rerun_flags(cfg)}" for shown, cfg in src.runs
                                       if not any(shown.startswith(sw.rstrip("/") + "/") for sw, _ in src.manifests)]})
    return {"title": title, "version": __version__, "setups": setups, "sources": sources,
            "families": families_context(results.board, site) if figures else None,
            "estimators": results.estimators, "command": command, "n_rows": len(results.board),
            "excluded": excluded_line(st for src in results.sources for _, st in src.incomplete)}


def _check_site_dir(out: Path) -> None:
    """``out`` must be new, empty or a page this command wrote before (``index.html`` beside ``assets/``): a
    re-run replaces its ``figures/``, ``repro/``, ``assets/`` and ``leaderboard.csv``, which in a run or sweep
    directory, or any other directory, would overwrite or delete what is there."""
    if not out.is_dir() or not any(out.iterdir()):
        return
    if (out / CONFIG).exists() or (out / MANIFEST).exists():
        raise MibenchError(f"{out} is a run or sweep directory: write the site elsewhere (its leaderboard.csv and "
                           "figures would be replaced)")
    if not ((out / "index.html").is_file() and (out / "assets").is_dir()):
        raise MibenchError(f"{out} is not empty and holds no mibench report: write the site into a new or empty "
                           "directory")


def write_site(paths, out, *, shown=None, title: str = "MI estimator leaderboard", command: str | None = None,
               figures: bool = True) -> Path:
    """Write the page for ``paths`` (run / sweep / results directories) into ``out``; returns
    ``out/index.html``.  ``shown``: the paths as the page names them (default as given)."""
    import jinja2

    from mibench.report.reading import read_results

    out = Path(out)
    paths = [Path(p) for p in paths]
    if out.exists() and not out.is_dir():
        raise MibenchError(f"{out} is a file; give a directory for the site")
    for p in paths:
        if p.is_dir() and out.resolve() == p.resolve():
            raise MibenchError(f"the site directory {out} is one of the result directories; choose another")
    _check_site_dir(out)
    consistency = consistency_tables(paths, [str(s) for s in (shown or paths)])
    try:
        results = read_results(paths, shown)
    except MibenchError:
        if not consistency:       # a directory of self-consistency tables alone holds no runs
            raise
        from mibench.report.reading import empty_results

        results = empty_results(paths, shown)
    shown = [str(s) for s in (shown or paths)]
    command = command or f"mibench report {' '.join(shown)} -o {out}"
    # the page is built in a staging directory next to ``out`` and moved in once whole: a run that fails
    # half-way (a damaged record, an interrupt) leaves ``out`` as it was, never half a site
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".mibench-report-", dir=out.parent))
    except OSError as exc:
        raise MibenchError(f"cannot write the site {out}: {exc.strerror or exc}") from None
    try:
        shutil.copytree(ASSETS, stage / "assets")
        ctx = build_context(results, stage, command, title, figures=figures)
        ctx["consistency"] = consistency
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                                 undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        (stage / "index.html").write_text(env.get_template("index.html").render(**ctx), encoding="utf-8")
        results.board.to_csv(stage / "leaderboard.csv", index=False)
        try:
            out.mkdir(exist_ok=True)
            for sub in ("figures", "repro", "assets"):     # a re-run replaces what it wrote before
                shutil.rmtree(out / sub, ignore_errors=True)
                if (stage / sub).exists():
                    (stage / sub).rename(out / sub)
            (stage / "leaderboard.csv").replace(out / "leaderboard.csv")
            (stage / "index.html").replace(out / "index.html")        # last: the page appears whole
        except OSError as exc:
            raise MibenchError(f"cannot write the site {out}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out / "index.html"
