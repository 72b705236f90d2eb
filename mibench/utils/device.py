"""The torch device a run or an estimate uses (``--device``)."""
from __future__ import annotations

from mibench.errors import MibenchError


def resolve_device(device: str = "auto"):
    """``auto`` (CUDA if available, else CPU), ``cpu``, ``cuda[:N]`` or ``mps[:N]`` (Apple GPUs, where
    this torch build and machine have it) as a ``torch.device``; an unavailable or unknown device
    is a one-line :class:`MibenchError`."""
    import torch

    device = str(device or "auto").strip().lower()
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    kind, colon, index = device.partition(":")
    if kind not in ("cpu", "cuda", "mps") or (colon and (not index.isdigit() or kind == "cpu")):
        raise MibenchError(f"--device must be auto, cpu, cuda[:N] or mps, got {device!r}")
    if kind == "cuda" and not torch.cuda.is_available():
        raise MibenchError("--device cuda requested but no CUDA device is available (use --device auto or cpu)")
    if kind == "mps" and not _mps_available():
        mps = getattr(torch.backends, "mps", None)
        why = ("this torch build has no MPS support" if mps is None or not mps.is_built()
               else "MPS needs an Apple-silicon Mac with macOS 12.3 or newer")
        raise MibenchError(f"--device mps requested but MPS is not available here ({why}; use --device auto or cpu)")
    return torch.device(device)


def _mps_available() -> bool:
    import torch

    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())

