"""Analysis of recorded runs: leaderboards, the regression gate, figures, data frames, and
``mibench.evaluate`` with the packaged baselines it ranks against.

* :mod:`.leaderboard` -- collect runs, aggregate over seeds, rank, write CSV / Markdown;
* :mod:`.gate` -- ``compare``: the regression gate (``mibench compare``);
* :mod:`.run_figures` -- what ``mibench plot`` draws for a run or a sweep;
* :mod:`.frames` -- :func:`load_runs`, every estimate as one DataFrame;
* :mod:`.evaluate` -- ``mibench.evaluate``, with :mod:`.baselines`, the packaged sample leaderboard;
* :mod:`.layer_study` -- the ResNet layer study (``mibench encoders layer-study``).
"""
from mibench.analysis.frames import load_runs

__all__ = ["load_runs"]
