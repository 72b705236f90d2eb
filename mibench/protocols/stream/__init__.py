"""The streaming protocol (the paper's): every estimator's critic trains on a fresh batch per
step while the true MI follows a schedule; one estimate per step.

* :mod:`.protocol` -- :class:`StreamProtocol`: configs and running (with :mod:`.records`, how its run
  directories are read, and :mod:`.cells`, its sweep cells);
* :mod:`.config` -- :class:`~mibench.protocols.stream.config.StreamConfig`, every run parameter declared once;
* :mod:`.run` -- the checks before a run, and the run itself;
* :mod:`.training` -- the training loop.
"""


def __getattr__(name):          # lazy: ``mibench run --help`` reads .config without importing numpy
    if name == "StreamProtocol":
        from mibench.protocols.stream.protocol import StreamProtocol

        return StreamProtocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
