"""Errors that reach the user as one clear line (the CLI prints them without a traceback)."""


class MibenchError(Exception):
    """A user-facing error: bad names, impossible settings, missing data."""


class DataNotFoundError(MibenchError):
    """A dataset is not present locally and cannot be downloaded."""
