"""Sweeps: a grid of runs, each cell a normal run directory, resumable, on local processes or Dask.

* :mod:`.spec` -- what the grid is (sweep configs, presets, the CLI shorthand -> cells);
* :mod:`.plan` -- what an invocation does with each cell (run, resume, skip);
* :mod:`.execute` -- where cells run and how the manifest ``sweep.json`` records them.
"""
from mibench.sweep.execute import Execution, SweepReport, available_cores, execute_cell, run_sweep
from mibench.sweep.lock import sweep_lock
from mibench.sweep.plan import Plan, plan
from mibench.sweep.spec import Cell, SweepSpec, dump_spec_yaml, load_spec

__all__ = ["Cell", "Execution", "Plan", "SweepReport", "SweepSpec", "available_cores", "dump_spec_yaml",
           "execute_cell", "load_spec", "plan", "run_sweep", "sweep_lock"]
