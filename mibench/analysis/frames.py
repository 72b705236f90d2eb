"""``mibench.load_runs``: every run's estimates under a directory as one pandas DataFrame, whatever
protocol wrote them (each protocol reads its own files, :meth:`RunProtocol.estimate_frame`)."""
from __future__ import annotations

from pathlib import Path

from mibench.errors import MibenchError

#: columns of every row: the estimate and where it comes from
BASE_COLUMNS = ["step", "estimator", "critic", "true_mi", "estimate", "run_id", "seed"]
#: config columns :func:`load_runs` adds to every estimate row (besides run_dir)
RUN_COLUMNS = ["protocol", "task", "task_params", "ds", "dr", "critic", "layers", "hidden", "embed", "batch_size",
               "lr", "steps", "schedule", "burn_in", "precision", "n", "status", "run_status", "diverged_step"]


def load_runs(path, complete_only: bool = False):
    """Every estimate of every run directory found under ``path``, as one pandas DataFrame.

    Parameters
    ----------
    path : a run directory, a sweep directory or any directory holding run directories (``results/``).
    complete_only : keep complete runs only (by default a partial run contributes what it logged).

    Returns
    -------
    DataFrame : one row per estimate: for a streaming run one per run x step x estimator, for a
        sample run one per run x true-MI level x seed x estimator (``step`` empty; the sample
        protocol's ``status`` of each estimate -- ``ok``, ``implausible``, ``error``, ... --, ``seconds``,
        ``kind``, ``mi_status``, ... columns kept).  Columns:
        ``step``, ``estimator``, ``critic``, ``true_mi``, ``estimate`` (bits), ``run_id``, ``seed``,
        the run's setup (``protocol``, ``task``, ``task_params`` -- ``k=v;...``, only values that differ
        from the task's defaults --, ``ds``, ``dr``, ``layers``, ``hidden``, ``embed``, ``batch_size``,
        ``lr``, ``steps``, ``schedule``, ``burn_in``, ``precision``, ``n``), ``run_status`` (``complete``,
        ``running``, ``stale``, ``interrupted``, ``failed``), ``status`` (a sample estimate's own, else the
        run's), ``diverged_step`` and ``run_dir``.  Average a sample run's estimates where ``status ==
        "ok"``: the protocol never averages the others in.

    >>> import mibench
    >>> df = mibench.load_runs("results/gaussian_staircase")
    >>> df.groupby(["estimator", "true_mi"])["estimate"].mean()       # doctest: +SKIP
    """
    import warnings

    import pandas as pd

    from mibench.errors import UnreadableInput
    from mibench.protocols import protocol_of
    from mibench.records import find_run_dirs, read_config, run_status

    if not isinstance(path, (str, Path)) or not str(path).strip():
        raise MibenchError(f"load_runs needs a run or sweep directory, got {path!r}")   # '' read the whole CWD
    complete, incomplete, _ = find_run_dirs([path])
    frames = []
    for d in sorted(complete + ([] if complete_only else incomplete)):
        try:
            cfg = read_config(d)
        except UnreadableInput:
            continue                        # config.json being written or damaged: not a run to read
        protocol = protocol_of(cfg)
        df = protocol.estimate_frame(d, cfg)
        if df is None:
            if d in complete:                # a complete run without its estimates file: say so, not 0 rows
                warnings.warn(f"{d}: a complete run without its estimates file; left out", stacklevel=2)
            continue
        setup = protocol.setup(cfg)
        for k in RUN_COLUMNS:
            if k in setup and k != "critic":
                df[k] = setup[k]
        if "critic" not in df.columns:
            df["critic"] = setup.get("critic")
        df["run_status"] = run_status(cfg)
        if "status" not in df.columns:      # a sample estimate keeps its own (ok, implausible, error, ...)
            df["status"] = df["run_status"]
        if "diverged_step" not in df.columns:
            df["diverged_step"] = float("nan")
        df["run_dir"] = str(d)
        frames.append(df)
    if not frames:
        if not Path(path).exists():
            raise MibenchError(f"no such run or sweep directory: {path}")
        return pd.DataFrame(columns=BASE_COLUMNS + [c for c in RUN_COLUMNS if c != "critic"] + ["run_dir"])
    out = pd.concat(frames, ignore_index=True)
    front = BASE_COLUMNS + [c for c in RUN_COLUMNS if c != "critic" and c in out.columns] + ["run_dir"]
    return out[front + [c for c in out.columns if c not in front]]
