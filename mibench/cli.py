"""The ``mibench`` command line. Thin: parses arguments and calls library functions.

Subcommands live next to the code they drive; each module in ``SUBCOMMAND_MODULES`` exposes
``register_cli(subparsers)`` which adds its parser and sets ``func`` (called with the parsed
arguments, returning an exit code).  User mistakes raise :class:`MibenchError` and are printed
as one line, exit code 2.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .errors import MibenchError, Terminated

SUBCOMMAND_MODULES = [
    "mibench.commands",             # run, list
    "mibench.data.cli",             # data
    "mibench.sweep_cli",            # sweep, leaderboard, compare, plot
    "mibench.disentanglement.cli",  # validate
    "mibench.encoders.cli",         # encoders (train-resnet, list)
]


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="mibench", description="Benchmark neural mutual-information estimators.")
    parser.add_argument("--version", action="version", version=f"mibench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a subcommand module not written yet
            if exc.name == name:
                continue
            raise
        module.register_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except MibenchError as exc:
        print(f"mibench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        if isinstance(exc, Terminated):
            print("mibench: terminated (SIGTERM); the run directory is marked interrupted", file=sys.stderr)
            return 143
        print("mibench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
