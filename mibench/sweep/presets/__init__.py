"""Sweep presets for the paper's studies (Lee & Rhee 2024, §5.1-5.6), each in two forms.

* ``full``: the paper's protocol (README of the papers folder / the authors' public code): joint
  critic 2 x 256 unless the study varies it, batch 64, Adam 5e-4, 20,000 steps, the "stepwise"
  schedule (2, 4, 6, 8, 10 bits, 4,000 steps each), all 8 estimators, 3 seeds (the text does not
  state the seed count).  Meant for a GPU: ``mibench sweep --preset estimators --full``.
* ``quick``: the same study shrunk for a CPU (fewer steps, estimators, grid points and seeds, a
  2 x 64 critic), so its shape can be checked in minutes.  Numbers from quick runs are *not*
  comparable with the paper's.

Choices the paper's text leaves open are stated per preset (``description``).  ``mibench sweep
--preset NAME --quick --dump-config`` prints a preset as an editable YAML config.
"""
from __future__ import annotations

import copy

from mibench.errors import MibenchError

ALL8 = ["nwj", "js", "infonce", "dv", "mine", "smile-1", "smile-5", "smile-inf"]
QUICK_EST = ["nwj", "infonce", "mine", "smile-5"]
FULL = {"steps": 20_000, "mi": "stepwise", "seeds": [0, 1, 2], "batch_size": 64, "lr": 5e-4,
        "hidden": 256, "layers": 2}
DS_FULL = [1, 4, 9, 16, 36, 64, 100]   # §5.4: ds from 1 to 100 (square grids for vision)
_NO_MI = lambda d: {k: v for k, v in d.items() if k != "mi"}   # noqa: E731  (ds: MI set per task)
DS_DIGIT_PX = 20   # §5.4 study: pixels per digit side (64^2 / 10 sources ~ 20^2 px each; 3 x 3 -> 60 x 60)
QUICK = {"steps": 1000, "mi": "stepwise", "seeds": [0, 1], "batch_size": 64, "lr": 5e-4, "hidden": 64, "layers": 2}

PRESETS: dict[str, dict] = {
    "smoke": {
        "section": "-",
        "description": "seconds-long sanity sweep (Gaussian, 2 estimators, 2 seeds); not a study",
        "quick": {"tasks": [{"task": "gaussian", "params": {"dim": 4}}], "estimators": ["smile-5", "infonce"],
                  "critics": ["joint"], "seeds": [0, 1], "steps": 100, "mi": "2,4", "hidden": 16, "layers": 1,
                  "batch_size": 32},
        "full": {"tasks": [{"task": "gaussian", "params": {"dim": 10}}], "estimators": ["smile-5", "infonce"],
                 "critics": ["joint"], "seeds": [0, 1], "steps": 2000, "mi": "2,4"},
    },
    "critics": {
        "section": "5.1",
        "description": "critic architecture: joint vs separable vs bilinear per domain (paper Fig. 3, 9); "
                       "mixed = image-text pairs",
        "full": {**FULL, "tasks": ["gaussian", "vision", "text", "mixed"], "estimators": ALL8,
                 "critics": ["joint", "separable", "bilinear"]},
        "quick": {**QUICK, "tasks": [{"task": "gaussian"}, "vision"],
                  "estimators": ["nwj", "infonce", "smile-5"], "critics": ["joint", "separable", "bilinear"],
                  "steps": 600, "mi": "2,4"},
    },
    "depth": {
        "section": "5.2",
        "description": "critic capacity: joint critic depth 1..5 hidden layers (paper Table 2 reports 2 bits; "
                       "the exact depths are in its supplement, we use 1-5)",
        "full": {**FULL, "tasks": ["gaussian", "vision", "text"], "estimators": ALL8, "critics": ["joint"],
                 "layers": [1, 2, 3, 4, 5]},
        "quick": {**QUICK, "tasks": ["gaussian", "vision"],
                  "estimators": QUICK_EST, "critics": ["joint"], "layers": [1, 2, 3], "steps": 600, "mi": 2},
    },
    "estimators": {
        "section": "5.3",
        "description": "estimator comparison per domain (paper Table 3): 8 estimators x Gaussian / vision / text, "
                       "joint critic, stepwise 2-10 bits",
        "full": {**FULL, "tasks": ["gaussian", "vision", "text"], "estimators": ALL8, "critics": ["joint"]},
        "quick": {**QUICK, "tasks": ["gaussian", "vision"],
                  "estimators": ["nwj", "js", "infonce", "dv", "mine", "smile-5"], "critics": ["joint"],
                  "steps": 1000, "mi": "2,4,6"},
    },
    "table3": {
        "section": "5.3",
        "description": "the paper's Table-3 grid as a timing target: 8 estimators x Gaussian / vision / text, "
                       "joint critic 2x256, batch 64, stepwise 2-10 bits, one seed; quick = the same grid at "
                       "1/20 of the steps (benchmarks/bench_grid.py times it)",
        "full": {**FULL, "seeds": [0], "tasks": [{"task": "gaussian", "params": {"dim": 10}}, "vision", "text"],
                 "estimators": ALL8, "critics": ["joint"], "split_estimators": 2},
        "quick": {**FULL, "seeds": [0], "steps": 1000, "tasks": [{"task": "gaussian", "params": {"dim": 10}}, "vision",
                  "text"], "estimators": ALL8, "critics": ["joint"], "split_estimators": 2},
    },
    "ds": {
        "section": "5.4",
        "description": "number of information sources ds (paper Fig. 4): one fair bit per source, true MI = ds bits "
                       "(Gaussian: dim = ds, 1 bit per dimension); vision: square 1 x r x r grids with every digit "
                       "kept at 20 x 20 px (side = 20 r: the paper's 64 x 64 image at ds = 10 gives ~20 x 20 px per "
                       "digit, and ds = 9 gives the authors' 60 x 60 canvas), so dr grows with ds",
        "full": {**_NO_MI(FULL), "estimators": ALL8, "critics": ["joint"],
                 "tasks": [{"task": "gaussian", "params": {"dim": d}, "mi": d} for d in DS_FULL]
                 + [{"task": "vision", "params": {"layout": f"1x{r}x{r}", "side": DS_DIGIT_PX * r}, "mi": r * r}
                    for r in (1, 2, 3, 4, 6, 8, 10)]
                 + [{"task": "text", "params": {"ds": d}, "mi": d} for d in DS_FULL]},
        "quick": {**_NO_MI(QUICK), "steps": 800, "seeds": [0], "estimators": QUICK_EST, "critics": ["joint"],
                  "tasks": [{"task": "gaussian", "params": {"dim": d}, "mi": d} for d in (1, 4, 16, 36)]
                  + [{"task": "vision", "params": {"layout": f"1x{r}x{r}", "side": DS_DIGIT_PX * r}, "mi": r * r}
                     for r in (1, 2, 4, 6)]},
    },
    "dr": {
        "section": "5.5",
        "description": "representation dimension dr = side^2 from 10^2 to 100^2 at fixed ds = 10 (vision, "
                       "bilinear resize of the digit canvas; paper Table 4)",
        "full": {**FULL, "estimators": ALL8, "critics": ["joint"],
                 "tasks": [{"task": "vision", "params": {"ds": 10, "side": [10, 20, 28, 40, 64, 100]}}]},
        "quick": {**QUICK, "mi": 2, "steps": 600, "estimators": QUICK_EST, "critics": ["joint"],
                  "tasks": [{"task": "vision", "params": {"ds": 10, "side": [10, 28, 64]}}]},
    },
    "nuisance": {
        "section": "5.6",
        "description": "nuisance strength eta 0..1 (CIFAR-10 backgrounds behind the digits; paper Fig. 5: 2 bits "
                       "in 5b, larger MI in 5c, both in the stepwise schedule)",
        "full": {**FULL, "estimators": ALL8, "critics": ["joint"],
                 "tasks": [{"task": "vision", "params": {"nuisance": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]}}]},
        "quick": {**QUICK, "mi": 2, "steps": 600, "estimators": QUICK_EST, "critics": ["joint"],
                  "tasks": [{"task": "vision", "params": {"nuisance": [0.0, 0.4, 1.0]}}]},
    },
}


def preset_names() -> list[str]:
    return list(PRESETS)


def preset_dict(name: str, form: str = "quick") -> dict:
    """The sweep-config dict of a preset (``form`` = "quick" or "full")."""
    import difflib

    key = str(name).strip().lower()
    if key not in PRESETS:
        close = difflib.get_close_matches(key, PRESETS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise MibenchError(f"unknown preset {name!r}{hint}; choose from: {', '.join(PRESETS)}")
    if form not in ("quick", "full"):
        raise MibenchError(f"preset form must be quick or full, got {form!r}")
    p = PRESETS[key]
    data = copy.deepcopy(p[form])
    data["name"] = f"{key}-{form}"
    section = f"paper §{p['section']}: " if p["section"] != "-" else ""
    data["description"] = f"{section}{p['description']} [{form}: {_summary(data)}]"
    return data


def _summary(d: dict) -> str:
    tasks = ", ".join(t if isinstance(t, str)
                      else t["task"] + "".join(f" {k}={v}" for k, v in t.get("params", {}).items())
                      for t in d["tasks"])
    est = d["estimators"]
    ns = sorted({t.get("n", d.get("n")) for t in d["tasks"] if isinstance(t, dict)} | ({d["n"]} if "n" in d else set()))
    if ns and None not in ns:   # the sample protocol (catalogue presets; n may be set per task)
        return (f"{len(d['tasks'])} tasks; {len(est)} estimators ({', '.join(est)}); sample protocol, "
                f"n = {' / '.join(str(n) for n in ns)} pairs per dataset; seeds {d['seeds']}")
    return (f"{tasks}; {len(est)} estimators; critic {'/'.join(d.get('critics', ['joint']))} "
            f"depth {d.get('layers', 2)} width {d.get('hidden', 256)}; {d['steps']} steps; "
            f"MI {d.get('mi', '= ds')} bits; seeds {d['seeds']}")


def load_preset(name: str, form: str = "quick"):
    from mibench.sweep import SweepSpec

    return SweepSpec.from_dict(preset_dict(name, form))


def describe_presets() -> str:
    lines = []
    for name, p in PRESETS.items():
        q = load_preset(name, "quick").cells()
        f = load_preset(name, "full").cells()
        sec = f"§{p['section']}" if p["section"] != "-" else "  -  "
        lines.append(f"  {name:<11}{sec:<6}{p['description']}")
        lines.append(f"  {'':<17}quick: {len(q)} cells x {_cell_size(q[0])}; full: {len(f)} cells x {_cell_size(f[0])}")
    return "\n".join(lines)


def _cell_size(cell) -> str:
    c = cell.config
    return f"{c['steps']} steps" if "steps" in c else f"n = {c['n']}, {len(c['seeds'])} seeds"


# the catalogue and encoder presets (§5.7) live in their own modules, which import this one's helpers
from mibench.sweep.presets.catalogues import PRESETS as _CATALOGUE_PRESETS  # noqa: E402, I001
from mibench.sweep.presets.encoders import PRESETS as _ENCODER_PRESETS  # noqa: E402

PRESETS.update(_CATALOGUE_PRESETS)
PRESETS.update(_ENCODER_PRESETS)
