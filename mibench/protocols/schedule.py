"""True-MI schedules: which MI level (bits) the task is asked for at each training step."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mibench.errors import MibenchError

#: the paper's "stepwise" schedule: 2, 4, 6, 8, 10 bits in equal segments (authors' public code)
STEPWISE_BITS = (2.0, 4.0, 6.0, 8.0, 10.0)


@dataclass(frozen=True)
class MISchedule:
    levels: tuple[float, ...]
    steps: int

    def __post_init__(self):
        if self.steps < len(self.levels):
            raise MibenchError(f"{self.steps} steps cannot hold {len(self.levels)} MI levels; use more --steps")

    @property
    def boundaries(self) -> np.ndarray:
        """Start step of each level, plus ``steps`` at the end (equal segments)."""
        n = len(self.levels)
        return np.round(np.arange(n + 1) * self.steps / n).astype(int)

    def true_mi(self) -> np.ndarray:
        """(steps,) array of the true MI in bits at every step."""
        b = self.boundaries
        return np.repeat(np.asarray(self.levels, dtype=float), np.diff(b))

    def describe(self) -> str:
        if len(self.levels) == 1:
            return f"constant {self.levels[0]:g} bits"
        levels = ", ".join(f"{v:g}" for v in self.levels)
        return f"staircase {levels} bits, {self.steps // len(self.levels)} steps each"


def parse_schedule(spec, steps: int) -> MISchedule:
    """``"stepwise"`` -> 2,4,6,8,10 bits; ``2`` or ``"2"`` -> constant; ``"1,3,5"`` -> custom staircase."""
    if isinstance(spec, (int, float)):
        levels = (float(spec),)
    elif isinstance(spec, (list, tuple)):
        levels = tuple(float(v) for v in spec)
    else:
        text = str(spec).strip().lower()
        if text in ("stepwise", "staircase"):
            levels = STEPWISE_BITS
        else:
            items = [v.strip() for v in text.split(",")]
            if "" in items and text:
                # '2,,4' is a typo to report, not 2,4 to guess (config.json would keep '2,,4')
                raise MibenchError(f"--mi lists an empty level: {spec!r}")
            try:
                levels = tuple(float(v) for v in items if v)
            except ValueError:
                raise MibenchError(f"--mi must be 'stepwise', a number of bits or a comma list of bits, "
                                   f"got {spec!r}") from None
    if not levels:
        raise MibenchError("empty MI schedule")
    for v in levels:
        if not np.isfinite(v) or v < 0:
            raise MibenchError(f"true MI must be a finite number >= 0 bits, got {v:g}")
    if steps < 1:
        raise MibenchError(f"--steps must be >= 1, got {steps}")
    return MISchedule(levels, int(steps))


def check_burn_in(burn_in: int, schedule: MISchedule) -> None:
    """A burn-in shorter than every MI level of ``schedule`` (else no step of a level would be scored): one line."""
    shortest = int(np.diff(schedule.boundaries).min())
    if burn_in >= shortest:
        raise MibenchError(f"--burn-in {burn_in} is as long as an MI level ({shortest} steps): no step would be "
                           "scored; use a smaller --burn-in or more --steps")
