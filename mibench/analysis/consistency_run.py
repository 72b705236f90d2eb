"""``mibench consistency``: the three self-consistency tests of Song & Ermon (ICLR 2020, §5) for a
list of estimators, critics and seeds on one or more datasets (:mod:`mibench.tasks.consistency`),
and the table of what passed (:mod:`mibench.analysis.consistency`).

The cells of one dataset, per critic and seed (seed-major, so a partial run covers every test for
the first seeds): the baseline at every t of the ``rows`` grid (default 0, 1/7, 2/7, 3/7, 4/7, 5/7 and
all of the image height), and the data-processing and additivity tasks at each t of ``ratio_rows``
(default 2/7 and 4/7 of the height, both on the grid).  Two ways to estimate a cell:

* ``stream`` (default; the paper's protocol and the cheaper one for critic-bound estimators): one
  streaming run per cell, all the estimators training together on one batch stream (one critic
  per training objective: js, smile-* and jsd-kl share one), ``steps`` steps of ``batch_size``
  pairs; an estimator's value is the mean of its last ``tail`` per-step estimates.  Critic-bound
  estimators only; no data set is stored, every batch is fresh images.
* ``sample``: ``n`` pairs drawn once per cell and seed, each estimator run on them through
  ``mibench.estimate`` (any estimator, black-box and generative ones included; critic-bound ones with
  its held-out readout).  With ``noise`` 0 a masked image is an exact function of the image and
  ``mibench.estimate`` reports I = inf (``deterministic``), so this route wants ``noise`` > 0.

Results go to ``OUT/consistency_estimates.csv`` (one row per estimator, cell and seed, appended as
cells finish: an interrupted command continues where it stopped when run again with the same
settings), ``OUT/consistency.json`` (the settings, the environment, every invocation's command and
wall time) and the table, ``OUT/consistency.csv`` / ``consistency.md``.
"""
from __future__ import annotations

import csv
import dataclasses
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mibench.errors import MibenchError

PROTOCOLS = ("stream", "sample")
#: the default estimators: ten estimators on four critics (infonce, nwj, mine, and the JS-trained one)
DEFAULT_ESTIMATORS = ["infonce", "nwj", "mine", "js", "js-paper", "smile-1", "smile-5", "smile-inf",
                      "smile-adaptive", "jsd-kl"]
ROW_FRACTIONS = (0, 1 / 7, 2 / 7, 3 / 7, 4 / 7, 5 / 7, 1)
RATIO_FRACTIONS = (2 / 7, 4 / 7)
ESTIMATE_COLUMNS = ["dataset", "critic", "test", "rows", "rows_h", "seed", "estimator", "estimate", "diverged_at",
                    "protocol", "steps", "seconds", "status"]
#: stream: an estimate is the mean of the last ``min(DEFAULT_TAIL, steps)`` steps unless ``--tail`` says
DEFAULT_TAIL = 100
#: settings that must agree for cells of an earlier invocation to be kept
KEPT_SETTINGS = ("protocol", "steps", "tail", "batch_size", "lr", "noise", "n", "data_dir")


@dataclass
class ConsistencySpec:
    """What ``mibench consistency`` runs (module docstring)."""

    datasets: list = field(default_factory=lambda: ["mnist"])
    estimators: list = field(default_factory=lambda: list(DEFAULT_ESTIMATORS))
    seeds: list = field(default_factory=lambda: [0, 1, 2])
    critics: list = field(default_factory=lambda: ["joint"])
    rows: list | None = None
    ratio_rows: list | None = None
    protocol: str = "stream"
    steps: int = 400
    tail: int | None = None
    batch_size: int = 64
    lr: float = 5e-4
    noise: float | None = None
    n: int = 4000
    device: str = "cpu"
    data_dir: str | None = None

    def resolved(self) -> "ConsistencySpec":
        """Names canonical, sizes checked (one line each)."""
        from mibench.critics import CRITICS
        from mibench.estimators import resolve_estimators
        from mibench.tasks.consistency import DATASETS

        if self.protocol not in PROTOCOLS:
            raise MibenchError(f"--protocol must be stream or sample, got {self.protocol!r}")
        bad = [d for d in self.datasets if d not in DATASETS]
        if bad or not self.datasets:
            raise MibenchError(f"unknown dataset {bad[0] if bad else ''!r}; choose from {', '.join(DATASETS)}")
        if not self.seeds:
            raise MibenchError("give at least one seed")
        estimators = resolve_estimators(self.estimators)
        if self.protocol == "stream":
            from mibench.estimators.registry import require_streamable

            require_streamable(estimators)
        spec = self if self.tail is not None else dataclasses.replace(self, tail=min(DEFAULT_TAIL, self.steps))
        spec._check_numbers(estimators)
        return dataclasses.replace(spec, estimators=estimators, critics=[CRITICS.get(c).name for c in self.critics],
                                   seeds=[int(s) for s in self.seeds])

    def _check_numbers(self, estimators: list) -> None:
        """Each number on its own first (a bad one blames its own flag, never another), then the
        bound between two (``--tail`` <= ``--steps``); all before anything is written to ``--out``."""
        from mibench.estimation.estimate import too_few_pairs
        from mibench.utils.checks import check_positive_int

        check_positive_int(self.steps, "--steps")
        check_positive_int(self.batch_size, "--batch-size", minimum=2 if self.protocol == "stream" else 1)
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise MibenchError(f"--lr must be a positive number, got {self.lr}")
        if self.noise is not None and not (isinstance(self.noise, (int, float)) and math.isfinite(self.noise)
                                           and self.noise >= 0):
            raise MibenchError(f"--noise must be a finite number >= 0, got {self.noise}")
        if self.protocol == "stream":
            check_positive_int(self.tail, "--tail")
            if self.tail > self.steps:
                raise MibenchError(f"--tail must be in [1, --steps], got {self.tail} with {self.steps} steps")
        else:
            too_few_pairs(check_positive_int(self.n, "--n"), estimators, "--n")

    def height(self, dataset: str) -> int:
        from mibench.tasks.consistency import DATASETS

        return DATASETS[dataset][0][1]

    def grid(self, dataset: str) -> tuple[list[int], list[int]]:
        """(the baseline's rows, the ratios' rows) of ``dataset``; the ratios' rows join the grid."""
        h = self.height(dataset)
        rows = sorted({int(r) for r in (self.rows or [round(f * h) for f in ROW_FRACTIONS])})
        ratio = sorted({int(r) for r in (self.ratio_rows or [round(f * h) for f in RATIO_FRACTIONS])})
        for r in rows + ratio:
            if not 0 <= r <= h:
                raise MibenchError(f"rows must be in [0, {h}] for {dataset}, got {r}")
        if 0 in ratio:
            raise MibenchError("--ratio-rows must be > 0 (the ratios divide by the baseline there)")
        return sorted(set(rows) | set(ratio)), ratio

    def settings(self) -> dict:
        return {k: getattr(self, k) for k in KEPT_SETTINGS}


@dataclass(frozen=True)
class Cell:
    dataset: str
    critic: str
    seed: int
    test: str
    rows: int
    rows_h: int | None = None

    def key(self) -> tuple:
        return (self.dataset, self.critic, self.test, self.rows, self.seed)

    def task_params(self, spec: ConsistencySpec) -> dict:
        params: dict = {"rows": self.rows}
        if self.rows_h is not None:
            params["rows_h"] = self.rows_h
        if spec.noise is not None:
            params["noise"] = float(spec.noise)
        if spec.data_dir:
            params["data_dir"] = spec.data_dir
        return params


def plan(spec: ConsistencySpec) -> list[Cell]:
    """Every cell, seed-major within each dataset and critic (module docstring)."""
    from mibench.tasks.consistency import DP_EXTRA_ROWS

    cells = []
    for dataset in spec.datasets:
        rows, ratio = spec.grid(dataset)
        for critic in spec.critics:
            for seed in spec.seeds:
                cells += [Cell(dataset, critic, seed, "baseline", t) for t in rows]
                cells += [Cell(dataset, critic, seed, "dp", t, max(t - DP_EXTRA_ROWS, 0)) for t in ratio]
                cells += [Cell(dataset, critic, seed, "additivity", t) for t in ratio]
    return cells


def _row(cell: Cell, spec: ConsistencySpec, name: str, value: float, seconds: float, **extra) -> dict:
    return {"dataset": cell.dataset, "critic": cell.critic, "test": cell.test, "rows": cell.rows,
            "rows_h": "" if cell.rows_h is None else cell.rows_h, "seed": cell.seed, "estimator": name,
            "estimate": value, "diverged_at": extra.get("diverged_at", ""), "protocol": spec.protocol,
            "steps": extra.get("steps", spec.steps), "seconds": round(seconds, 3), "status": extra.get("status", "ok")}


def stream_cell(spec: ConsistencySpec, cell: Cell) -> list[dict]:
    """One streaming run of the cell's task, every estimator together; each one's value is the mean of
    its last ``tail`` estimates (bits)."""
    import numpy as np

    from mibench.protocols import get_protocol
    from mibench.protocols.stream.config import StreamConfig

    protocol = get_protocol("stream")
    cfg = StreamConfig(task=f"consistency-{cell.test}-{cell.dataset}", task_params=cell.task_params(spec),
                       estimators=list(spec.estimators), critic=cell.critic, batch_size=spec.batch_size, lr=spec.lr,
                       mi=0.0, steps=spec.steps, seed=cell.seed, device=spec.device, log_every=spec.steps)
    t0 = time.perf_counter()
    result = protocol.run(protocol.prepare(cfg), None, plot=False)
    seconds = time.perf_counter() - t0
    out = []
    for i, name in enumerate(result.names):
        tail = result.estimates[i, -spec.tail:]
        value = float(np.mean(tail)) if np.all(np.isfinite(tail)) else float("nan")
        step = result.diverged.get(name)
        out.append(_row(cell, spec, name, value, seconds, diverged_at="" if step is None else step,
                        status="ok" if math.isfinite(value) else "diverged"))
    return out


def sample_cell(spec: ConsistencySpec, cell: Cell) -> list[dict]:
    """``n`` pairs of the cell's task (seeded by cell and seed), each estimator through
    ``mibench.estimate`` (bits; a failure is recorded, not raised)."""
    import torch

    from mibench.critics import takes_shapes
    from mibench.errors import one_line
    from mibench.estimation import estimate
    from mibench.estimators.kinds import BLACK_BOX
    from mibench.estimators.registry import estimator_kind
    from mibench.tasks import make_task
    from mibench.utils.seeding import derived_seed

    task = make_task(f"consistency-{cell.test}-{cell.dataset}", device="cpu", **cell.task_params(spec))
    gen = torch.Generator().manual_seed(derived_seed(cell.seed, "consistency", cell.test, cell.rows))
    x, y = (a.double().numpy() for a in task.sample(spec.n, 0.0, gen))
    kwargs = {"steps": spec.steps, "batch_size": spec.batch_size, "lr": spec.lr}
    if takes_shapes(cell.critic):
        kwargs["reduce"] = False            # a projection would not be an image any more
    out = []
    for name in spec.estimators:
        t0 = time.perf_counter()
        try:
            # a black-box estimator trains nothing: the training settings are not its (passing them is an error)
            own = {} if estimator_kind(name) == BLACK_BOX else kwargs
            res = estimate(x, y, estimator=name, critic=cell.critic, seed=cell.seed, device=spec.device,
                           units="bits", **own)
            out.append(_row(cell, spec, name, float(res.mi), time.perf_counter() - t0, status=res.status,
                            steps=getattr(res, "steps_run", "") or ""))
        except MibenchError as exc:
            print(f"mibench: {name} on {cell}: {one_line(exc)}", file=sys.stderr)
            out.append(_row(cell, spec, name, float("nan"), time.perf_counter() - t0, status="error", steps=""))
    return out


CELL_RUNNERS = {"stream": stream_cell, "sample": sample_cell}


def append_estimates(path: Path, rows: list[dict]) -> None:
    new = not path.is_file()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=ESTIMATE_COLUMNS, lineterminator="\n")
        if new:
            w.writeheader()
        w.writerows(rows)


def exact_estimates(spec) -> list[dict]:
    """Rows of the ``exact`` estimator (the known truth; none where it is unknown: images with noise)."""
    from mibench.analysis.consistency import EXACT
    from mibench.tasks import make_task

    out, cache = [], {}
    for cell in plan(spec):
        if cell.critic != spec.critics[0]:
            continue
        key = (cell.dataset, cell.test, cell.rows)
        if key not in cache:
            task = make_task(f"consistency-{cell.test}-{cell.dataset}", **cell.task_params(spec))
            truth = task.truth_bits()
            cache[key] = next(iter(truth.values()), None)
        if cache[key] is not None:
            out.append({"dataset": cell.dataset, "critic": "", "test": cell.test, "rows": cell.rows,
                        "seed": cell.seed, "estimator": EXACT, "estimate": cache[key], "seconds": 0.0})
    return out


def _start(spec: ConsistencySpec, out: Path, command: str, overwrite: bool) -> dict:
    """consistency.json of ``out`` with this invocation added; refuses other settings (one line)."""
    from mibench.records import CONFIG, MANIFEST
    from mibench.records.io import read_json, write_json

    if (out / CONFIG).is_file() or (out / MANIFEST).is_file():    # its --overwrite would delete these tables
        raise MibenchError(f"{out} is a run or sweep directory: write the self-consistency tables elsewhere")
    meta_path = out / "consistency.json"
    meta = read_json(meta_path, "consistency.json") if meta_path.is_file() and not overwrite else None
    if overwrite:
        for name in ("consistency.json", "consistency_estimates.csv", "consistency.csv", "consistency.md"):
            (out / name).unlink(missing_ok=True)
    if meta is not None and meta.get("settings") != spec.settings():
        raise MibenchError(f"{out} holds self-consistency results with other settings ({meta.get('settings')}); "
                           "give another --out or --overwrite")
    meta = meta or {"kind": "mibench self-consistency tests", "settings": spec.settings(), "invocations": []}
    meta["invocations"].append({"command": command, "spec": dataclasses.asdict(spec), "started": _now(),
                                "environment": _environment(spec.device)})
    out.mkdir(parents=True, exist_ok=True)
    write_json(meta_path, meta)
    return meta


def run_consistency(spec: ConsistencySpec, out, *, command: str = "", overwrite: bool = False,
                    progress: bool = True, runner=None) -> list[dict]:
    """Run every cell of ``spec`` not yet in ``out`` and write the table; returns the table's rows
    (:func:`mibench.analysis.consistency.summarize`).  ``runner(spec, cell) -> rows`` replaces the
    protocol's cell runner (tests)."""
    from mibench.analysis.consistency import read_estimates, write_tables
    from mibench.records.io import write_json

    spec = spec.resolved()
    out = Path(out)
    cells = plan(spec)                       # checks the rows before anything in out is written or removed
    meta = _start(spec, out, command, overwrite)
    est_path = out / "consistency_estimates.csv"
    done = {(r["dataset"], r["critic"], r["test"], r["rows"], r["seed"], r["estimator"])
            for r in read_estimates(est_path)}
    runner = runner or CELL_RUNNERS[spec.protocol]
    t0 = time.perf_counter()
    for i, cell in enumerate(cells):
        names = [n for n in spec.estimators if (*cell.key(), n) not in done]
        if not names:
            continue
        rows = runner(dataclasses.replace(spec, estimators=names), cell)
        append_estimates(est_path, rows)
        if progress:
            print(f"[{i + 1}/{len(cells)}] {cell.dataset} {cell.critic} seed {cell.seed} {cell.test} t={cell.rows}: "
                  + ", ".join(f"{r['estimator']} {r['estimate']:.2f}" for r in rows)
                  + f" ({rows[0]['seconds']:.0f} s)" if rows else "", file=sys.stderr, flush=True)
    meta["invocations"][-1].update(finished=_now(), wall_seconds=round(time.perf_counter() - t0, 1))
    write_json(out / "consistency.json", meta)
    estimates = read_estimates(est_path) + exact_estimates(spec)
    return write_tables(out, estimates, {d: spec.grid(d) for d in spec.datasets}, spec.seeds)


def _now() -> str:
    from mibench.records.run_dir import now_iso

    return now_iso()


def _environment(device: str) -> dict:
    import platform

    import torch

    from mibench._version import __version__

    return {"mibench": __version__, "torch": torch.__version__, "python": platform.python_version(),
            "device": device, "torch_threads": torch.get_num_threads(), "machine": platform.machine()}
