"""Errors that reach the user as one clear line, and the ``mibench`` command's exit codes.

The CLI prints a :class:`MibenchError` as one line (no traceback) and exits with the error's
``exit_code``:

===  ==================================================================================
0    everything ran and every estimate was obtained
1    ``mibench compare``: a row regressed (or is missing); the gate failed
2    a usage error: unknown names, impossible settings, bad flags, an ``--out`` that cannot be used
3    the command ran, but some estimates failed (an exception, a NaN / inf, a timeout, a crashed
     worker, a failed sweep cell); the run's summary counts them
4    unusable input: a results or data file that is missing, empty, truncated or malformed
130  interrupted (Ctrl-C);  143: terminated (SIGTERM)
===  ==================================================================================
"""

EXIT_OK = 0
EXIT_REGRESSED = 1
EXIT_USAGE = 2
EXIT_FAILED_ESTIMATES = 3
EXIT_BAD_INPUT = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class MibenchError(Exception):
    """A user-facing error: bad names, impossible settings, missing data (exit code 2)."""

    exit_code = EXIT_USAGE


class DataNotFoundError(MibenchError):
    """A dataset is not present locally and cannot be downloaded."""


class UnreadableInput(MibenchError):
    """A results or data file is missing, empty, truncated or malformed (exit code 4)."""

    exit_code = EXIT_BAD_INPUT


class Terminated(KeyboardInterrupt):
    """SIGTERM asked a run or a sweep driver to stop: raised at its next safe point (a step, an
    estimate, a wait), like Ctrl-C; what ran says ``interrupted``."""


def one_line(exc: BaseException) -> str:
    """``"TypeName: first line of the message"`` (``"TypeName"`` when the message is empty): how a
    failed run, sweep cell or estimate records its error."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")
