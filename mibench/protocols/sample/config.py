"""The sample protocol's config: every run parameter declared once (:func:`~mibench.protocols.params.param`);
its own flags (``--n``, ``--seeds``, ``--timeout``) and config.json's types are derived from it (the
parameters it shares with the streaming protocol take ``mibench run``'s flags of that one).  Light:
no torch or numpy at import."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from mibench.errors import MibenchError
from mibench.protocols.params import field_types, param

DEFAULT_N = 10_000
DEFAULT_TIMEOUT = 600.0


@dataclass
class SampleConfig:
    """A sample run (the BMI benchmark's protocol): one fixed dataset per true-MI level and seed."""

    task: str = param("gaussian", check=str, flag=None, help="task name")
    task_params: dict = param(default_factory=dict, check=dict, flag=None, help="the task's parameters")
    estimators: list = param(default_factory=lambda: ["ksg"], flag=None, help="estimator names")
    critic: str = param("joint", check=str, flag=None, help="critic of critic-bound estimators (mibench.estimate)")
    mi: object = param(4.0, flag=None, help="one true-MI level or a comma list of levels, bits")
    n: int = param(DEFAULT_N, check=int, axis="n", help="sample protocol: n pairs per dataset (e.g. 10000); every "
                   "estimator returns one number per dataset; needed by black-box / generative estimators")
    seeds: list = param(default_factory=lambda: [0, 1, 2], help="sample protocol: seeds, comma list or range "
                        "(default: `mibench run` the one --seed; sweeps and mibench.evaluate 0,1,2)")
    timeout: float | None = param(DEFAULT_TIMEOUT, check=(float, None), help="sample protocol: seconds per "
                                  "estimate before its worker is killed and the estimate recorded as failed "
                                  f"(default {DEFAULT_TIMEOUT:g}; 0 = in-process, no limit)")
    device: str = param("auto", check=str, flag=None, help="auto | cpu | cuda[:N] | mps")
    estimate_kwargs: dict = param(default_factory=dict, check=dict, flag=None,
                                  help="steps, batch_size, ... for mibench.estimate")
    protocol: str = param("sample", check=str, flag=None, help="the protocol's name")

    def resolved(self) -> "SampleConfig":
        """Canonical names, typed values; a bad value is one line."""
        from mibench.critics import CRITICS
        from mibench.estimation.estimate import too_few_pairs
        from mibench.estimators import resolve_estimators
        from mibench.protocols.schedule import parse_schedule
        from mibench.utils.checks import parse_seeds
        from mibench.utils.limits import HARD_LIMITS, hard_limit

        levels = list(parse_schedule(self.mi, 10**9).levels)
        written = [round(float(v), 6) for v in levels]        # the records keep six decimals
        if len(set(written)) < len(written):
            same = sorted({v for v in written if written.count(v) > 1})
            raise MibenchError(f"--mi lists levels that are the same to six decimals ({', '.join(map(str, same))} "
                               "bits): the records could not tell them apart")
        names = resolve_estimators(self.estimators)
        n = hard_limit(self.n, "--n")
        for key, value in (self.estimate_kwargs or {}).items():
            if key in HARD_LIMITS:
                hard_limit(value, "--" + key.replace("_", "-"), key)
        _check_training_flags(self.estimate_kwargs or {})
        too_few_pairs(n, names, "--n")
        seeds = parse_seeds(self.seeds, "--seeds")
        timeout = None if self.timeout in (None, 0, "none") else float(self.timeout)
        if timeout is not None and not (timeout > 0 and math.isfinite(timeout)):
            raise MibenchError(f"--timeout must be a positive number of seconds, got {self.timeout}")
        critic = CRITICS.get(self.critic).name
        return dataclasses.replace(self, task_params=dict(self.task_params), estimators=names, critic=critic,
                                   mi=levels if len(levels) > 1 else levels[0], n=n, seeds=seeds, timeout=timeout,
                                   estimate_kwargs=dict(self.estimate_kwargs or {}))

    @property
    def levels(self) -> list[float]:
        return [float(v) for v in (self.mi if isinstance(self.mi, (list, tuple)) else [self.mi])]


def check_memory(cfg: SampleConfig, task, device, critic_bound: bool) -> None:
    """Refuse in one line a run whose datasets (``--n`` pairs, with the copies an estimate makes)
    or, for critic-bound estimators, whose critic and training (``mibench.estimate``'s settings:
    the flags given, else its data-sized defaults) cannot fit in the memory available
    (:mod:`mibench.utils.limits`)."""
    from mibench.utils.limits import DATASET_COPIES, FLOAT, Need, batch_need, check_fits, estimate_sizes_fit

    dims = (int(task.dim_x), int(task.dim_y))
    per_pair = getattr(task, "bytes_per_pair", FLOAT * sum(dims))
    check_fits([Need("the dataset and its copies", cfg.n * sum(dims) * 8 * DATASET_COPIES, "--n", on_device=False),
                batch_need(min(cfg.n, 16_384), per_pair, dims, "--n")], device, "this run")
    if critic_bound:
        from mibench.critics import critic_sizes
        from mibench.estimation.defaults import default_settings
        from mibench.tasks.shapes import check_critic_for_task

        values = {**default_settings(cfg.n, *dims), **cfg.estimate_kwargs}
        values["batch_size"] = min(int(values["batch_size"]), cfg.n)
        critic = critic_sizes(cfg.critic, *dims, check_critic_for_task(cfg.critic, task))
        estimate_sizes_fit(values, cfg.n, critic, int(cfg.estimate_kwargs.get("embed", 32)), device, flags=True)


#: the least value of each training flag a sample run passes to its critic estimators
TRAINING_FLAG_FLOORS = {"steps": 1, "batch_size": 2, "hidden": 1, "layers": 0, "embed": 1}


def takes_training_flags(estimators) -> bool:
    """Whether some estimator of ``estimators`` (names or a spec ``resolve_estimators`` reads) is a critic
    bound, the only kind a sample run's training flags reach."""
    from mibench.estimators import ESTIMATORS, resolve_estimators
    from mibench.estimators.kinds import CRITIC

    return any(getattr(ESTIMATORS.get(n).obj, "kind", None) == CRITIC for n in resolve_estimators(estimators))


def check_flags_reach_a_critic(kwargs: dict, estimators) -> None:
    """Training flags of a sample run (``--steps``, ``--lr``, ...) given only where a critic estimator
    takes them: the black-box and generative estimators train with their own settings (recorded as
    ``estimator_settings`` in config.json), so flags given for them alone were ignored in silence.  (A
    sweep's spec-wide settings reach every cell, including cells of other estimators, so it is checked
    on the command line only.)"""
    from mibench.estimators import resolve_estimators

    names = resolve_estimators(estimators)
    if kwargs and not takes_training_flags(names):
        flags = ", ".join("--" + k.replace("_", "-") for k in sorted(kwargs))
        own = "uses its" if len(names) == 1 else "use their"
        raise MibenchError(f"{flags} set a critic estimator's training; {', '.join(names)} {own} own settings "
                           "(recorded as estimator_settings in config.json): leave them out")


def _check_training_flags(kwargs: dict) -> None:
    """The training flags of a sample run in range (:data:`TRAINING_FLAG_FLOORS`; ``lr`` positive)."""
    for key, value in kwargs.items():
        least = TRAINING_FLAG_FLOORS.get(key)
        bad = (not (value > 0 and math.isfinite(value))) if key == "lr" else (least is not None and value < least)
        if bad:
            want = "a positive number" if key == "lr" else f">= {least}"
            raise MibenchError(f"--{key.replace('_', '-')} must be {want}, got {value}")


#: the type of every field in a config.json (None: checked by ``resolved``)
FIELD_TYPES = field_types(SampleConfig)


def config_from_dict(data: dict, where: str = "config") -> SampleConfig:
    """A :class:`SampleConfig` from config.json's ``config`` (one line for unknown fields or bad types)."""
    from mibench.utils.checks import check_fields

    return SampleConfig(**check_fields(data, FIELD_TYPES, where))
