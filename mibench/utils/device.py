"""The torch device a run or an estimate uses (``--device``)."""
from __future__ import annotations

from mibench.errors import MibenchError


def resolve_device(device="auto"):
    """``auto`` (CUDA if available, else CPU), ``cpu``, ``cuda[:N]`` or ``mps[:N]`` (Apple GPUs, where
    this torch build and machine have it), a ``torch.device``, or an integer N (``cuda:N``, as
    ``torch.device(N)`` reads it) as a ``torch.device``; None is ``auto``.  An unavailable or unknown
    device is a one-line :class:`MibenchError` worded for the CLI's ``--device`` and the Python
    ``device=`` alike."""
    import torch

    given = device
    if device is None:
        device = "auto"
    elif isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        device = f"cuda:{device}"
    elif not isinstance(device, (str, torch.device)):
        raise MibenchError(f"device must be 'auto', 'cpu', 'cuda[:N]' or 'mps', got {given!r}")
    device = str(device).strip().lower()
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    kind, colon, index = device.partition(":")
    if kind not in ("cpu", "cuda", "mps") or (colon and (not index.isdigit() or kind == "cpu")):
        raise MibenchError(f"device must be 'auto', 'cpu', 'cuda[:N]' or 'mps', got {given!r}")
    if kind == "cuda" and not torch.cuda.is_available():
        raise MibenchError(f"device {device!r} requested but no CUDA device is available (use 'auto' or 'cpu')")
    if kind == "mps" and not _mps_available():
        mps = getattr(torch.backends, "mps", None)
        why = ("this torch build has no MPS support" if mps is None or not mps.is_built()
               else "MPS needs an Apple-silicon Mac with macOS 12.3 or newer")
        raise MibenchError(f"device {device!r} requested but MPS is not available here ({why}; use 'auto' or 'cpu')")
    return torch.device(device)


def _mps_available() -> bool:
    import torch

    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())

