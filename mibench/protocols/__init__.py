"""The run protocols behind one interface (:class:`~mibench.protocols.base.RunProtocol`).

``PROTOCOLS`` maps names to protocol objects; :func:`protocol_of` picks the protocol of a run from
its config.json.  Everything above the records layer that handles runs of either protocol --
``run``, sweeps, the leaderboard, plots, ``load_runs``, ``--config`` -- goes through these.
"""
from __future__ import annotations

from mibench.errors import MibenchError, UnreadableInput
from mibench.utils.registry import Registry

PROTOCOLS: Registry = Registry("protocol")
#: the protocol of run directories written before config.json named one
LEGACY_PROTOCOL = "stream"


def _stream():
    from mibench.protocols.stream.protocol import StreamProtocol

    return StreamProtocol()


def _sample():
    from mibench.protocols.sample.protocol import SampleProtocol

    return SampleProtocol()


PROTOCOLS.add("stream", "a fresh batch per training step, the true MI on a schedule; an estimate per step",
              _stream)
PROTOCOLS.add("sample", "one fixed dataset of n pairs per MI level and seed; one number per estimator",
              _sample)
_CACHE: dict = {}


def get_protocol(name: str):
    """The protocol object named ``name`` (``stream`` or ``sample``)."""
    entry = PROTOCOLS.get(name)
    if entry.name not in _CACHE:
        _CACHE[entry.name] = entry.obj()
    return _CACHE[entry.name]


def choose_protocol(settings: dict):
    """The protocol of a run or sweep cell with these settings (``n`` set: the sample protocol)."""
    for entry in PROTOCOLS:
        protocol = get_protocol(entry.name)
        if protocol.claims(settings):
            return protocol
    raise MibenchError("no protocol runs these settings")  # pragma: no cover (stream claims the rest)


def protocol_of(config: dict):
    """The protocol that wrote a run, from its config.json (a dict).  A recorded run config whose
    fields are unknown or of the wrong type is a damaged record: one :class:`UnreadableInput` line."""
    name = config.get("protocol") or (config.get("config") or {}).get("protocol") or LEGACY_PROTOCOL
    try:
        protocol = get_protocol(name)
    except MibenchError:
        raise UnreadableInput(f"config.json names an unknown protocol {name!r}") from None
    raw = config.get("config")
    if isinstance(raw, dict) and "task" in raw:
        try:
            protocol.config_from_dict(raw, "its config")
        except MibenchError as exc:
            run = f" of run {config['run_id']}" if isinstance(config.get("run_id"), str) else ""
            raise UnreadableInput(f"config.json{run} is damaged: {exc}") from None
    return protocol


__all__ = ["PROTOCOLS", "choose_protocol", "get_protocol", "protocol_of"]
