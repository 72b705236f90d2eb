"""Upper limits of the size parameters, and the memory a run or an estimate needs, checked before
anything is allocated: what cannot fit is refused in one :class:`MibenchError` line (exit 2).

Two kinds of limit (the table is in docs/run-directory.md, "Size limits"):

* **hard caps** (:data:`HARD_LIMITS`): values no machine runs, or that overflow the int64 arrays
  and records, refused whatever the memory (they also hold where the memory cannot be read);
* **memory**: the bytes a run will hold at its peak, estimated from the sizes (:class:`Need`:
  the critic's parameters with Adam's state, a training step's activations and score matrices,
  the per-step records, a dataset, a task's rendered batch), compared with the memory available
  (:func:`available_memory`: ``psutil`` if installed, else ``/proc/meminfo`` MemAvailable; on a
  CUDA device its free memory for what lives there).  A run may plan to use :data:`HEADROOM` of it.

The estimates are upper-side approximations (how close they come to real peaks: docs/run-directory.md,
"Size limits"), meant to refuse what cannot fit, not to predict the peak to the byte.  Light: no torch or numpy at
import.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mibench.errors import MibenchError

#: where the table of limits is documented
DOCS = "docs/run-directory.md#size-limits"

#: hard caps: parameter -> (largest value, why)
HARD_LIMITS = {
    "steps": (10**9, "10^9 steps hold ~160 GB of records per estimator; the paper trains 20,000"),
    "batch_size": (2**17, "a score matrix of 2^34 entries per step"),
    "hidden": (2**17, "2^34 weights per hidden layer"),
    "layers": (1_000, "a critic a thousand layers deep"),
    "embed": (2**17, "2^34 weights in the separable critic's last layers"),
    "n": (10**9, "10^9 pairs per dataset"),
}

#: bytes of a float32
FLOAT = 4
#: copies of each critic parameter while training: the value, its gradient and Adam's two moments
ADAM_COPIES = 4
#: copies of a hidden layer's activations a training step holds (value, ReLU mask, gradient)
ACTIVATION_COPIES = 3
#: copies of a step's score matrix (the scores, the head's exp / log-sum-exp temporaries, gradients)
SCORE_COPIES = 8
#: bytes a streaming run records per step and estimator: the device buffer (float32), its host copy
#: (float64), the summary's and the figure's arrays and estimates.csv's rows as text when the run
#: finishes (rounded up from a real run's bytes: docs/run-directory.md, "Size limits")
RECORD_BYTES_PER_STEP = 160
#: bytes ``mibench.estimate`` keeps per training step (the loss buffer and the curve)
ESTIMATE_BYTES_PER_STEP = 12
#: copies of a dataset the sample protocol and ``mibench.estimate`` hold at once (float64 arrays,
#: the standardised copy, the training / held-out tensors)
DATASET_COPIES = 4
#: share of the available memory a run may plan to use
HEADROOM = 0.9
#: sizes a run typically has; a refusal names the size furthest above its typical value as the one to lower
TYPICAL = {"batch": 256, "hidden": 256, "layers": 2, "dims": 1000}


@dataclass(frozen=True)
class Need:
    """One part of what a run will hold: ``label`` (what it is), ``nbytes``, the parameter that
    sizes it (``flag``, named as the user gives it: ``--batch-size`` or ``batch_size``) and whether
    it lives on the run's device (else in host memory)."""

    label: str
    nbytes: int
    flag: str
    on_device: bool = True


def hard_limit(value, name: str, key: str | None = None) -> int:
    """``value`` as an int, refused in one line above its hard cap (``HARD_LIMITS[key]``, ``key``
    defaulting to ``name`` without dashes)."""
    key = key or name.lstrip("-").replace("-", "_")
    limit, why = HARD_LIMITS[key]
    try:
        v = int(value)
    except (TypeError, ValueError, OverflowError):
        raise MibenchError(f"{name} must be an integer, got {value!r}") from None
    if v > limit:
        raise MibenchError(f"{name} {_num(v)} is above mibench's limit of {limit:,} ({why}); see {DOCS}")
    return v


def _num(v: int) -> str:
    return f"{v:,}" if abs(v) < 10**15 else f"{v:.3g}"


def fmt_bytes(n: float) -> str:
    """``1.5 GB``-style (decimal units)."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} PB"


def host_available() -> int | None:
    """Bytes of host memory available to a new allocation (None where it cannot be read)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return int(psutil.virtual_memory().available)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_memory(device=None) -> tuple[int | None, str]:
    """(bytes available, where) on ``device`` (a ``torch.device``, a string or None for host
    memory): a CUDA device's free memory, else the host's (:func:`host_available`)."""
    if device is not None and str(getattr(device, "type", device)).startswith("cuda"):
        try:
            import torch

            return int(torch.cuda.mem_get_info(device)[0]), f"free on {device}"
        except Exception:  # no CUDA context: say nothing rather than guess
            return None, str(device)
    return host_available(), "available in host memory"


def check_fits(needs: list[Need], device=None, what: str = "this run") -> None:
    """Refuse in one line when ``needs`` exceed :data:`HEADROOM` of the available memory (where
    it can be read), naming the parameter behind the largest part."""
    on_gpu = device is not None and str(getattr(device, "type", device)).startswith("cuda")
    pools = {"device": [n for n in needs if n.on_device and on_gpu],
             "host": [n for n in needs if not (n.on_device and on_gpu)]}
    for pool, parts in pools.items():
        total = sum(max(0, int(p.nbytes)) for p in parts)
        if not parts or total == 0:
            continue
        avail, where = available_memory(device if pool == "device" else None)
        if avail is None or total <= HEADROOM * avail:
            continue
        parts = sorted(parts, key=lambda p: -p.nbytes)
        shown = ", ".join(f"{p.label} {fmt_bytes(p.nbytes)}" for p in parts[:3] if p.nbytes > 0)
        raise MibenchError(f"{what} needs about {fmt_bytes(total)} of memory ({shown}), more than the "
                           f"{fmt_bytes(avail)} {where}: lower {parts[0].flag} (limits: {DOCS})")


# ----------------------------------------------------------------------------------- estimates


class SizedCritic(Protocol):
    """A critic's declared sizes on the run's inputs (:func:`mibench.critics.critic_sizes`): the
    critic classes declare them, the callers hand them here (this module sits below the critics)."""

    dims: tuple[int, int]

    def parameters(self, hidden: int, layers: int, embed: int) -> int: ...

    def activations(self, batch: int, pairs_per_row: int, hidden: int, layers: int, embed: int) -> int: ...


def critic_activation_bytes(activations: int, batch: int, pairs_per_row: int) -> int:
    """Bytes of one training step: the critic's ``activations`` (values, :data:`ACTIVATION_COPIES`
    each) and the score matrix of ``batch * pairs_per_row`` pairs with the head's temporaries."""
    return (activations * ACTIVATION_COPIES + batch * pairs_per_row * SCORE_COPIES) * FLOAT


def critic_needs(critic: SizedCritic, sizes: dict, names: dict, copies: tuple[int, int] = (1, 1)) -> list[Need]:
    """The critics' parameters (with Adam's state) and a step's activations, as ``critic`` declares
    them.  ``sizes``: ``batch``, ``hidden``, ``layers``, ``embed`` and optionally ``pairs_per_row``
    (default ``batch``: every pair of the batch scored); ``names``: how the user names batch / hidden /
    layers; ``copies``: (critics trained, critics whose step is held at once).  Each part names the
    size that is furthest above its :data:`TYPICAL` value as the one to lower."""
    dims = critic.dims
    dim_x, dim_y = dims
    b, h, depth = sizes["batch"], sizes["hidden"], sizes["layers"] + 1
    pairs_per_row = sizes.get("pairs_per_row") or b
    params = critic.parameters(h, sizes["layers"], sizes["embed"])
    acts = critic_activation_bytes(critic.activations(b, pairs_per_row, h, sizes["layers"], sizes["embed"]),
                                   b, pairs_per_row)
    names = {**names, "dims": dims_name(dims)}
    if (dim_x + dim_y) * h >= sizes["layers"] * h * h:
        grow = {"dims": (dim_x + dim_y) / TYPICAL["dims"], "hidden": h / TYPICAL["hidden"]}
    else:
        grow = {"layers": depth / (TYPICAL["layers"] + 1), "hidden": (h / TYPICAL["hidden"]) ** 2}
    step = {"batch": (b / TYPICAL["batch"]) ** 2, "hidden": h / TYPICAL["hidden"],
            "layers": depth / (TYPICAL["layers"] + 1)}
    return [Need("critic parameters with Adam's state", copies[0] * params * FLOAT * ADAM_COPIES,
                 names[max(grow, key=grow.get)]),
            Need("a training step's activations and scores", copies[1] * acts, names[max(step, key=step.get)])]


def batch_need(batch: int, per_pair: int, dims: tuple[int, int], batch_name: str) -> Need:
    """The task's batch of ``batch`` pairs of ``per_pair`` bytes (the batch size or the task's
    dimensions named as the size to lower, whichever is further above its typical value)."""
    grow = batch / TYPICAL["batch"] >= (dims[0] + dims[1]) / TYPICAL["dims"]
    return Need("the task's batches", 2 * batch * per_pair, batch_name if grow else dims_name(dims))


def dims_name(dims: tuple[int, int]) -> str:
    return f"the task's dimensions (dim_x + dim_y = {dims[0] + dims[1]:,})"


def estimate_sizes_fit(values: dict, n: int, critic: SizedCritic, embed: int, device=None,
                       flags: bool = False) -> None:
    """``mibench.estimate``'s training settings (``values``: ``steps``, ``batch_size``, ``hidden``,
    ``layers``, with the data-sized defaults filled in) against the hard caps and the memory, for
    ``n`` pairs of ``critic.dims`` (dim_x, dim_y); one line naming the keyword to lower (``flags``:
    the ``mibench run`` flag instead)."""
    dims = critic.dims
    name = (lambda key: "--" + key.replace("_", "-")) if flags else (lambda key: key)  # noqa: E731
    for key in ("steps", "batch_size", "hidden", "layers"):
        hard_limit(values[key], name(key), key)
    hard_limit(embed, name("embed"), "embed")
    block = min(32, int(values["batch_size"]))     # a step scores each pair against a block (estimation.defaults.BLOCK)
    sizes = {"batch": int(values["batch_size"]), "hidden": int(values["hidden"]), "layers": int(values["layers"]),
             "embed": int(embed), "pairs_per_row": block}
    needs = critic_needs(critic, sizes, {k: name(v) for k, v in
                                               (("batch", "batch_size"), ("hidden", "hidden"), ("layers", "layers"))})
    needs += [Need("the per-step loss buffer and curve", int(values["steps"]) * ESTIMATE_BYTES_PER_STEP, name("steps")),
              Need("copies of the data", n * (dims[0] + dims[1]) * 8 * DATASET_COPIES,
                   "--n" if flags else "the number of pairs", on_device=False)]
    check_fits(needs, device, "this run" if flags else "mibench.estimate with these settings")
