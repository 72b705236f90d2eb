"""The sample protocol (the BMI benchmark's): one fixed dataset of n pairs per true-MI level and
seed; one number per estimator and dataset.

* :mod:`.protocol` -- :class:`SampleProtocol`: configs and running (with :mod:`.records`, how its run
  directories are read, and :mod:`.cells`, its sweep cells);
* :mod:`.config` -- :class:`~mibench.protocols.sample.config.SampleConfig`, every run parameter declared once;
* :mod:`.run` -- the datasets and the run itself;
* :mod:`.job` -- one estimate of one dataset (what an estimate worker runs).
"""


def __getattr__(name):          # lazy: ``mibench run --help`` reads .config without importing numpy
    if name == "SampleProtocol":
        from mibench.protocols.sample.protocol import SampleProtocol

        return SampleProtocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
