"""``sweep.json``: a sweep directory's manifest, written by the sweep driver only, atomically,
after every cell.

Keys: ``mibench_sweep`` (format version 1), ``name``, ``spec`` (the normalised sweep spec;
the set of its cells' configs is what a later ``--resume`` must match or extend),
``command`` / ``preset`` / ``backend`` / ``workers`` / ``threads_per_worker`` of the latest
invocation, ``invocations`` (one entry per run or resume, with its wall time), ``status``
(``running`` / ``complete`` / ``incomplete`` / ``interrupted``), ``counts`` and ``cells`` (name,
directory, status, attempts, wall time, divergence, error, host, config).
"""
from __future__ import annotations

import contextlib
from pathlib import Path

from mibench.errors import UnreadableInput
from mibench.records.io import read_json, write_json
from mibench.records.run_dir import MANIFEST, now_iso


class SweepManifest:
    """The manifest of one sweep invocation (resumes carry the previous cells' attempts over)."""

    def __init__(self, out_dir, name: str, spec: dict, cell_configs: dict, meta: dict):
        self.path = Path(out_dir) / MANIFEST
        old = {}
        if self.path.is_file():
            with contextlib.suppress(UnreadableInput):
                old = read_manifest(self.path.parent) or {}
        old_cells = {c["name"]: c for c in old.get("cells", [])}
        self.data = {
            "mibench_sweep": 1,
            "name": name,
            **meta,
            "created": old.get("created", now_iso()),
            "updated": now_iso(),
            "status": "running",
            "spec": spec,
            "invocations": old.get("invocations", []) + [{"started": now_iso(), **meta}],
            "counts": {},
            "cells": [],
        }
        for cell_name, config in cell_configs.items():
            prev = old_cells.get(cell_name, {})
            self.data["cells"].append({"name": cell_name, "dir": cell_name, "status": "pending",
                                       "attempts": prev.get("attempts", 0), "config": config})
        self.by_name = {c["name"]: c for c in self.data["cells"]}

    def update(self, name: str, **fields) -> None:
        self.by_name[name].update(fields)

    def write(self, status: str | None = None) -> None:
        counts: dict[str, int] = {}
        for c in self.data["cells"]:
            counts[c["status"]] = counts.get(c["status"], 0) + 1
        counts["diverged"] = sum(1 for c in self.data["cells"] if c.get("diverged"))
        self.data["counts"] = counts
        self.data["updated"] = now_iso()
        if status:
            self.data["status"] = status
        write_json(self.path, self.data)


def read_manifest(sweep_dir) -> dict | None:
    """``sweep_dir/sweep.json`` (None when there is none; a damaged one is one line)."""
    path = Path(sweep_dir) / MANIFEST
    if not path.is_file():
        return None
    data = read_json(path, "sweep manifest")
    if not isinstance(data, dict):
        raise UnreadableInput(f"{path} is not a mibench sweep manifest")
    return data
