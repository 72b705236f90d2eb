#!/usr/bin/env python
"""Start-up time of the command line and of ``import mibench``, lazy vs eager, in one run.

Each case is a fresh interpreter (``python -c ...``), timed wall-clock from spawn to exit; the
cases alternate within each round (background load hits all alike) and the median over rounds
is reported.  "eager" is what ``mibench --help`` did before the command table: it builds the
parser with every subcommand module imported (``cli.build_parser("*")``, which imported torch,
numpy, scipy through the encoders / validate modules when these lived in their packages; the
case imports those packages first to reproduce it); "lazy" is today's ``mibench --help``.

Then ``mibench COMMAND --help`` for every subcommand in ``cli.COMMANDS`` (and every action of
``mibench encoders``), today's code.  For the two whose parsers used to live inside torch-importing
packages (``mibench.disentanglement.cli``, ``mibench.encoders.cli``, moved to the light
``mibench/cli/validate.py`` / ``mibench/cli/encoders.py``), "before" is reproduced by importing
what the old module's import did first (``mibench.disentanglement.validate`` / the
``mibench.encoders`` package), then the same ``--help``.  Also listed: which heavy modules each
case imported.

    python benchmarks/bench_startup.py [--rounds 7]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "numpy", "scipy", "pandas", "matplotlib", "sklearn", "transformers")
PROBE = ("import sys, json\nexec({code!r})\n"
         "print(json.dumps([m for m in {heavy!r} if m in sys.modules]), file=sys.stderr)")

_HELP = ("import contextlib, io\nfrom mibench.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
         "    try: main({argv!r} + ['--help'])\n    except SystemExit: pass")
#: every subcommand of cli.COMMANDS, and every action of ``mibench encoders``
_SUBCOMMANDS = ["run", "list", "data", "sweep", "leaderboard", "compare", "plot", "validate", "encoders",
                "encoders list", "encoders train-resnet", "encoders check", "encoders layer-study"]

CASES = {
    "python -c pass (interpreter alone)": "pass",
    "import mibench": "import mibench",
    "mibench --help (lazy: command table)": "import contextlib, io\nfrom mibench.cli import main\n"
                                            "with contextlib.redirect_stdout(io.StringIO()):\n"
                                            "    try: main(['--help'])\n    except SystemExit: pass",
    **{f"mibench {c} --help": _HELP.format(argv=c.split()) for c in _SUBCOMMANDS},
    "mibench validate --help, before (parser in mibench.disentanglement)":
        "import mibench.disentanglement.validate\n" + _HELP.format(argv=["validate"]),
    "mibench encoders --help, before (parser in mibench.encoders)":
        "import mibench.encoders\n" + _HELP.format(argv=["encoders"]),
    "mibench --help, eager parser (before)": "import mibench.disentanglement.validate, mibench.encoders\n"
                                             "import contextlib, io\nfrom mibench.cli import build_parser\n"
                                             "with contextlib.redirect_stdout(io.StringIO()): "
                                             "build_parser('*').print_help()",
}


#: the installed console script itself (what a user types), when it is next to this interpreter
SCRIPT = Path(sys.executable).with_name("mibench")


def run_case(code) -> tuple[float, list]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv = code if isinstance(code, list) else [sys.executable, "-c", PROBE.format(code=code, heavy=HEAVY)]
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(REPO))
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"case failed: {code!r}\n{r.stderr}")
    return dt, (["(not probed)"] if isinstance(code, list) else json.loads(r.stderr.strip().splitlines()[-1]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    if SCRIPT.is_file():
        CASES["`mibench --help` (console script)"] = [str(SCRIPT), "--help"]
        CASES["`mibench validate --help` (console script)"] = [str(SCRIPT), "validate", "--help"]
    for code in CASES.values():          # warm the OS file cache and the .pyc files
        run_case(code)
    times = {k: [] for k in CASES}
    loaded = {}
    for _ in range(args.rounds):
        for name, code in CASES.items():
            dt, mods = run_case(code)
            times[name].append(dt)
            loaded[name] = mods
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    print(f"# start-up time, median of {args.rounds} interleaved rounds (fresh interpreter each), "
          f"python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d %H:%M')}")
    for name, t in med.items():
        print(f"{name:<68} {t * 1e3:7.0f} ms   heavy modules imported: {', '.join(loaded[name]) or 'none'}")
    lazy, eager = med["mibench --help (lazy: command table)"], med["mibench --help, eager parser (before)"]
    print(f"\nmibench --help: eager / lazy = {eager / lazy:.1f}x ({eager * 1e3:.0f} ms -> {lazy * 1e3:.0f} ms)")
    for cmd, pkg in (("validate", "mibench.disentanglement"), ("encoders", "mibench.encoders")):
        old, new = med[f"mibench {cmd} --help, before (parser in {pkg})"], med[f"mibench {cmd} --help"]
        print(f"mibench {cmd} --help: before / now = {old / new:.1f}x ({old * 1e3:.0f} ms -> {new * 1e3:.0f} ms)")
    sub = {k: v for k, v in med.items() if k.startswith("mibench ") and k.endswith(" --help") and k != "mibench --help"}
    slowest = max(sub, key=sub.get)
    print(f"every subcommand's --help ({len(sub)}): {min(sub.values()) * 1e3:.0f}-{sub[slowest] * 1e3:.0f} ms "
          f"(slowest: {slowest}); interpreter alone {med['python -c pass (interpreter alone)'] * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
