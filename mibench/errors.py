"""Errors that reach the user as one clear line (the CLI prints them without a traceback)."""


class MibenchError(Exception):
    """A user-facing error: bad names, impossible settings, missing data."""


class DataNotFoundError(MibenchError):
    """A dataset is not present locally and cannot be downloaded."""


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived while a run was training: the run stops at the next step, like Ctrl-C,
    and its config.json says ``interrupted`` (see ``mibench.harness._sigterm_stops_training``)."""
