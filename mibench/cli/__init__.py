"""The ``mibench`` command line. Thin: parses arguments and calls library functions.

Each command group is a module of this package (named in :data:`COMMANDS`) with
``register_cli(subparsers)``, which adds its parsers and sets ``func`` to a ``cmd_<name>`` handler
(called with the parsed arguments, returning an exit code); :mod:`.args` holds the argument parsers
they share.  User mistakes raise :class:`MibenchError` and are printed
as one line with the error's exit code (:mod:`mibench.errors`: 2 usage, 4 unreadable input).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from mibench.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE, MibenchError, Terminated

#: every subcommand: (module whose ``register_cli`` builds its parser, the one-line help that
#: ``mibench --help`` lists).  The top-level parser is built from this table alone, so
#: ``mibench --help`` imports no subcommand module (none of torch, numpy, scipy); only the chosen
#: subcommand's module is imported, and each module imports its heavy dependencies inside the
#: command functions.  ``tests/test_packaging.py`` checks the table against the modules' parsers.
COMMANDS = {
    "run": ("mibench.cli.run", "train estimators on a task and write a run directory"),
    "list": ("mibench.cli.run", "list tasks, estimators and critics"),
    "data": ("mibench.cli.data", "show which datasets are present (and verified), prepare caches, download"),
    "sweep": ("mibench.cli.sweep", "run a grid of runs (resumable; local processes or Dask)"),
    "leaderboard": ("mibench.cli.results", "aggregate runs over seeds into a ranked leaderboard (CSV + Markdown)"),
    "compare": ("mibench.cli.results", "regression gate: exit 1 when NEW is worse than BASELINE"),
    "plot": ("mibench.cli.results", "figures for a run or a sweep (staircase, bias/variance/MSE, sweep curves)"),
    "validate": ("mibench.cli.validate",
                 "validate disentanglement metrics' MI back-ends against the analytic Gaussian toy model"),
    "encoders": ("mibench.cli.encoders",
                 "encoders: list, finetune-text (the default text pool's), train-resnet, check"),
    "report": ("mibench.cli.report",
               "a static leaderboard web page (tables, figures, metadata, reproduce commands) for run / sweep "
               "directories"),
    "consistency": ("mibench.cli.consistency", "self-consistency tests on MNIST / CIFAR-10 (Song & Ermon 2020): "
                    "baseline, data processing, additivity"),
}

#: the subcommand modules, in the order ``mibench --help`` lists their commands (from :data:`COMMANDS`)
SUBCOMMAND_MODULES = list(dict.fromkeys(module for module, _ in COMMANDS.values()))


def build_parser(command: str | None = "*") -> argparse.ArgumentParser:
    """The ``mibench`` parser.  ``command="*"`` (default): every subcommand's full parser (imports
    every subcommand module); ``command=NAME``: the full parser of NAME's module only, the other
    subcommands as help-only entries; ``command=None``: help-only entries (what ``mibench --help``
    needs)."""
    from mibench._version import __version__

    parser = argparse.ArgumentParser(prog="mibench", description="Benchmark neural mutual-information estimators.")
    parser.add_argument("--version", action="version", version=f"mibench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    full = set(SUBCOMMAND_MODULES) if command == "*" else {COMMANDS[command][0]} if command in COMMANDS else set()
    for name in SUBCOMMAND_MODULES:
        if name in full:
            importlib.import_module(name).register_cli(sub)
            continue
        for cmd, (mod, text) in COMMANDS.items():
            if mod == name:
                sub.add_parser(cmd, help=text, add_help=False)     # listed by --help; never selected
    return parser


def _chosen_command(argv: list[str]) -> str | None:
    """The subcommand named on the command line: the first word that is not an option (the
    top-level parser has only -h/--help and --version, which take no value)."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def _subparser(parser: argparse.ArgumentParser, command: str | None):
    """The parser of subcommand ``command`` inside ``parser`` (None when there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(command)
    return None


def main(argv: list[str] | None = None) -> int:
    """The ``mibench`` command: its exit code.  A reader of stdout that goes away early
    (``mibench list | head``) ends it quietly with exit 0, as Python command-line tools conventionally
    do: stdout is flushed here, not at interpreter exit, and once its pipe is closed it is pointed at
    os.devnull so that nothing more is written to it.  A result the command had decided keeps its
    exit code (:func:`mibench.cli.args.printing_result`: the regression gate's 1 stays 1)."""
    code = EXIT_OK
    try:
        try:
            code = _main(argv)
            return code
        finally:
            sys.stdout.flush()
    except BrokenPipeError as exc:
        if not stdout_closed():
            raise
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return getattr(exc, "exit_code", code)


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (a BrokenPipeError from elsewhere, e.g. a
    worker's pipe, is an error like any other)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return True
    except (OSError, ValueError):
        return False
    try:
        import select

        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & select.POLLERR for _, event in poll.poll(0))
    except (AttributeError, OSError, ValueError):     # no poll() (Windows), no file descriptor
        return False


def _main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _chosen_command(argv)
    # a known subcommand: only its module is imported; no command, or a word not in COMMANDS: the
    # help-only parser (a typo gets argparse's one-line "invalid choice" error listing every
    # command, from the table, with no subcommand module imported)
    parser = build_parser(command if command in COMMANDS else None)
    args, unknown = parser.parse_known_args(argv)
    if unknown:     # say it with the subcommand's own usage line, not the top-level one
        sub = _subparser(parser, command)
        (sub or parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    for dest in ("out", "output"):      # an empty path is a mistake (a shell variable unset), not "the default"
        if getattr(args, dest, None) is not None and not str(getattr(args, dest)).strip():
            (_subparser(parser, command) or parser).error(f"--{dest} is empty: give a path")
    # this is a mibench process (not a library call from someone's Python): keep freed activation
    # buffers in the heap for the training commands' speed (see mibench.utils.allocator)
    from mibench.utils.allocator import tune_cpu_allocator

    tune_cpu_allocator()
    try:
        return int(args.func(args) or 0)
    except MibenchError as exc:
        print(f"mibench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:      # a path the command must write (or read) cannot be: read-only, full, not a directory
        if isinstance(exc, BrokenPipeError) and stdout_closed():
            raise               # the reader of stdout has gone: main ends quietly
        where = f" {exc.filename}" if exc.filename else ""
        print(f"mibench: error: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        # a command with --resume continues with it; the others (consistency) by the same command again
        again = "--resume continues it" if hasattr(args, "resume") else "the same command again continues it"
        if isinstance(exc, Terminated):
            print(f"mibench: terminated (SIGTERM); what ran is marked interrupted ({again})", file=sys.stderr)
            return EXIT_TERMINATED
        print(f"mibench: interrupted; what ran is marked interrupted ({again})", file=sys.stderr)
        return EXIT_INTERRUPTED

