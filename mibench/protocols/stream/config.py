"""The streaming protocol's config: every run parameter declared once (:func:`~mibench.protocols.params.param`),
from which config.json's types, ``mibench run``'s flags and a sweep's axes are derived.  Light: no
torch or numpy at import (``mibench run --help`` reads it)."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from mibench.errors import MibenchError
from mibench.protocols.params import field_types, param, sweep_axes

#: critic arithmetic.  fp32 is the default and the reference; bf16 (torch.autocast: matmuls and
#: activations in bfloat16, parameters, optimizer and estimator heads in fp32) and tf32 (CUDA matmuls
#: only) are opt-in speed options whose effect on the estimates benchmarks/bench_precision.py reports.
PRECISIONS = ("fp32", "bf16", "tf32")
ENGINES = ("auto", "sequential", "stacked")


@dataclass
class StreamConfig:
    """A streaming run (the paper's protocol, §5): the fields in the order a sweep enumerates its axes."""

    task: str = param("gaussian", check=str, help="task name (see `mibench list`)")
    task_params: dict = param(default_factory=dict, check=dict, flag=None, help="the task's parameters")
    estimators: list = param(default_factory=lambda: ["smile-5"], flag="--estimator",
                             help="estimator name(s), comma separated, or 'all'")
    critic: str = param("joint", check=str, axis="critics",
                        help="critic: inner, bilinear, separable, joint; conv, conv-joint (image tasks)")
    layers: int = param(2, check=int, axis="layers",
                        help="critic depth: hidden layers between input and output layer")
    hidden: int = param(256, check=int, axis="hidden", help="critic MLP width")
    embed: int = param(32, check=int, axis="embed", help="separable critic embedding size")
    batch_size: int = param(64, check=int, axis="batch_size", help="batch size K")
    lr: float = param(5e-4, check=float, axis="lr", help="Adam learning rate")
    mi: object = param("stepwise", axis="mi", help="'stepwise' (2,4,6,8,10 bits), a number of bits, or a comma "
                                                    "list; a sample run (--n) left without it takes 4 bits")
    steps: int = param(20_000, check=int, axis="steps", help="training steps")
    burn_in: int = param(0, check=int, axis="burn_in",
                         help="steps skipped at the start of each MI level in the metrics")
    seed: int = param(0, check=int, axis="seeds", help="seed of the batch stream and the critics (0 .. 2^63-1)")
    device: str = param("auto", check=str, help="auto | cpu | cuda[:N] | mps (auto: CUDA if available, else CPU)")
    log_every: int = param(250, check=int, flag=None, help="steps per block appended to estimates.csv")
    engine: str = param("auto", check=str, help="several joint critics: sequential | stacked (one batched pass) | auto")
    precision: str = param("fp32", check=str, help="critic arithmetic: fp32 | bf16 (autocast, opt-in, ~1.5x faster "
                           "on CPUs with AVX512-BF16) | tf32 (CUDA matmuls)")

    def resolved(self) -> "StreamConfig":
        """Canonical names, typed values; a bad value is one line."""
        from mibench.critics import CRITICS
        from mibench.estimators import resolve_estimators
        from mibench.utils.checks import check_critic_sizes, check_seed
        from mibench.utils.limits import hard_limit

        cfg = dataclasses.replace(self, estimators=resolve_estimators(self.estimators),
                                  task_params=dict(self.task_params), critic=CRITICS.get(self.critic).name)
        check_seed(cfg.seed, "--seed")
        check_critic_sizes(cfg.hidden, cfg.layers, cfg.embed)
        if cfg.steps < 1:
            raise MibenchError(f"--steps must be >= 1, got {cfg.steps}")
        if cfg.batch_size < 2:
            raise MibenchError(f"--batch-size must be >= 2 (off-diagonal pairs are the negatives), "
                               f"got {cfg.batch_size}")
        for flag in ("--steps", "--batch-size", "--hidden", "--layers", "--embed"):
            hard_limit(getattr(cfg, flag[2:].replace("-", "_")), flag)
        if cfg.lr <= 0 or not math.isfinite(cfg.lr):
            raise MibenchError(f"--lr must be a positive number, got {cfg.lr}")
        if cfg.burn_in < 0:
            raise MibenchError(f"--burn-in must be >= 0, got {cfg.burn_in}")
        if cfg.log_every < 1:
            raise MibenchError(f"log_every must be >= 1, got {cfg.log_every}")
        if cfg.engine not in ENGINES:
            raise MibenchError(f"--engine must be auto, sequential or stacked, got {cfg.engine!r}")
        if cfg.precision not in PRECISIONS:
            raise MibenchError(f"--precision must be one of {', '.join(PRECISIONS)}, got {cfg.precision!r}")
        if cfg.engine == "stacked" and cfg.critic != "joint":
            raise MibenchError("--engine stacked is implemented for the joint critic only")
        return cfg


def check_memory(cfg: StreamConfig, task, device) -> None:
    """Refuse in one line a run whose critics, training step, task batches and per-step records
    cannot fit in the memory available (:mod:`mibench.utils.limits`), before anything is built."""
    from mibench.critics import critic_sizes
    from mibench.estimators import training_groups
    from mibench.protocols.stream.training import choose_engine
    from mibench.tasks.shapes import check_critic_for_task
    from mibench.utils.limits import FLOAT, RECORD_BYTES_PER_STEP, Need, batch_need, check_fits, critic_needs

    critics = len(training_groups(cfg.estimators))
    held = critics if choose_engine(cfg, device) == "stacked" else 1
    sizes = {"batch": cfg.batch_size, "hidden": cfg.hidden, "layers": cfg.layers, "embed": cfg.embed}
    names = {"batch": "--batch-size", "hidden": "--hidden", "layers": "--layers"}
    per_pair = getattr(task, "bytes_per_pair", FLOAT * (task.dim_x + task.dim_y))
    critic = critic_sizes(cfg.critic, task.dim_x, task.dim_y, check_critic_for_task(cfg.critic, task))
    needs = critic_needs(critic, sizes, names, (critics, held))
    needs += [batch_need(cfg.batch_size, per_pair, (task.dim_x, task.dim_y), "--batch-size"),
              Need("the per-step records", cfg.steps * len(cfg.estimators) * RECORD_BYTES_PER_STEP, "--steps",
                   on_device=False)]
    check_fits(needs, device, "this run")


#: the type of every field in a config.json (None: checked by ``resolved`` / the schedule)
FIELD_TYPES = field_types(StreamConfig)
#: grid axes of a streaming sweep (spec key -> field), in the order cells are enumerated
AXES = sweep_axes(StreamConfig)


def config_from_dict(data: dict, where: str = "config") -> StreamConfig:
    """A :class:`StreamConfig` from config.json's ``config`` (one line for unknown fields or bad types)."""
    from mibench.utils.checks import check_fields

    data = check_fields({k: v for k, v in data.items() if k != "protocol"}, FIELD_TYPES, where)
    return StreamConfig(**data)
