"""A sweep's specification: the keys of a TOML / YAML sweep config, a preset or the CLI shorthand
(docs/sweeps.md, "Config keys"), normalised into a :class:`SweepSpec` whose :meth:`~SweepSpec.cells` are
resolved run configs.

All estimators of a cell train together on the same batch stream (streaming protocol; the
numbers are the same as if each trained alone).  ``split_estimators = N`` splits them into N cells
with nearly equal numbers of critics; estimators that share a critic (JS, SMILE-tau) stay in one
cell, and ``split_estimators = true`` gives one cell per critic (sample protocol: per estimator).
"""
from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from mibench.errors import MibenchError
from mibench.utils.checks import listify

#: grid axes of the spec (each protocol reads the ones it knows; see its ``expand``)
AXIS_KEYS = ["critics", "layers", "hidden", "embed", "batch_size", "lr", "mi", "steps", "burn_in", "seeds"]
SCALARS = ("device", "log_every", "precision", "n", "timeout")
SPEC_KEYS = {"name", "description", "tasks", "params", "estimators", "split_estimators", "execution",
             *AXIS_KEYS, *SCALARS}
TASK_KEYS = {"task", "params", "estimators", *AXIS_KEYS, *SCALARS}
SINGULAR = {"critic": "critics", "seed": "seeds", "estimator": "estimators", "task": "tasks",
            "batch": "batch_size", "depth": "layers", "width": "hidden", "schedule": "mi"}
EXECUTION_KEYS = {"backend", "workers", "threads", "address", "shared_fs"}


def _normalise_keys(d: dict, allowed: set, where: str) -> dict:
    out = {}
    for key, value in d.items():
        k = str(key).strip().replace("-", "_").lower()
        k = SINGULAR.get(k, k)
        if k not in allowed:
            close = difflib.get_close_matches(k, sorted(allowed), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(sorted(allowed))}"
            raise MibenchError(f"unknown key {key!r} in {where}{hint}")
        if k in out:
            raise MibenchError(f"key {k!r} given twice in {where} (singular and plural?)")
        out[k] = value
    return out


@dataclass
class Cell:
    """One cell of a sweep: a run directory name and its resolved config (JSON-ready)."""

    name: str
    config: dict

    @property
    def protocol(self):
        from mibench.protocols import protocol_of

        return protocol_of({"config": self.config})


@dataclass
class SweepSpec:
    """A normalised sweep specification (see the module docstring for the keys)."""

    name: str = "sweep"
    description: str = ""
    tasks: list = field(default_factory=list)       # [{"task": str, "params": {..}, overrides...}]
    params: dict = field(default_factory=dict)
    estimators: object = field(default_factory=lambda: ["smile-5"])
    split_estimators: bool | int = False
    grid: dict = field(default_factory=dict)        # axis -> list (AXIS_KEYS)
    scalars: dict = field(default_factory=dict)     # device, log_every, precision, n, timeout
    execution: dict = field(default_factory=dict)   # backend, workers, threads, address, shared_fs

    @classmethod
    def from_dict(cls, data: dict, name: str | None = None) -> "SweepSpec":
        from mibench.protocols.setup import check_split

        if not isinstance(data, dict):
            raise MibenchError("a sweep config must be a table / mapping at the top level")
        d = _normalise_keys(data, SPEC_KEYS, "the sweep config")
        tasks_raw = d.get("tasks")
        if tasks_raw is None:
            raise MibenchError("the sweep config needs 'tasks' (e.g. tasks = [\"gaussian\"])")
        tasks = []
        for t in listify(tasks_raw):
            if isinstance(t, str):
                tasks.append({"task": t, "params": {}})
            elif isinstance(t, dict):
                td = _normalise_keys(t, TASK_KEYS | {"tasks"}, "a [[tasks]] table")
                if "tasks" in td:          # "task" was normalised to the plural
                    td["task"] = td.pop("tasks")
                if "task" not in td or not isinstance(td["task"], str):
                    raise MibenchError("every [[tasks]] table needs task = \"<name>\"")
                td["params"] = _table(td.get("params"), "a [[tasks]] table's params")
                tasks.append(td)
            else:
                raise MibenchError(f"tasks must be names or tables, got {t!r}")
        spec = cls(name=str(name or d.get("name") or "sweep"), description=str(d.get("description", "")),
                   tasks=tasks, params=_table(d.get("params"), "params"), estimators=d.get("estimators", ["smile-5"]),
                   split_estimators=check_split(d.get("split_estimators", False)),
                   grid={a: d[a] for a in AXIS_KEYS if a in d}, scalars={k: d[k] for k in SCALARS if k in d},
                   execution=_normalise_keys(_table(d.get("execution"), "[execution]"), EXECUTION_KEYS, "[execution]"))
        spec.cells()   # validate now: a mistake is one line before anything runs
        return spec

    def to_dict(self) -> dict:
        out = {"name": self.name}
        if self.description:
            out["description"] = self.description
        out["tasks"] = [dict(t) for t in self.tasks]
        if self.params:
            out["params"] = dict(self.params)
        out["estimators"] = self.estimators
        out.update(self.grid)
        out.update(self.scalars)
        if self.split_estimators:
            out["split_estimators"] = self.split_estimators
        if self.execution:
            out["execution"] = dict(self.execution)
        return out

    def with_overrides(self, **over) -> "SweepSpec":
        """A copy with top-level keys replaced (CLI flags over a file or preset); an overridden
        key is also removed from per-task tables, so the flag wins everywhere."""
        data = self.to_dict()
        for key, value in over.items():
            if value is None:
                continue
            key = SINGULAR.get(key, key)
            if key == "params":      # merged: --set dim=2,4 replaces only 'dim'
                data["params"] = {**data.get("params", {}), **value}
                for t in data["tasks"]:
                    for k in value:
                        t.get("params", {}).pop(k, None)
                continue
            data[key] = value
            if key in TASK_KEYS - {"task"}:
                for t in data["tasks"]:
                    t.pop(key, None)
        return SweepSpec.from_dict(data)

    def cells(self) -> list[Cell]:
        """Every cell of the grid, named (readable, deterministic, unique)."""
        from mibench.estimators import resolve_estimators
        from mibench.protocols import choose_protocol
        from mibench.protocols.schedule import parse_schedule
        from mibench.tasks import TASKS
        from mibench.tasks.base import check_fixed_level, check_mi_request, mi_for_task
        from mibench.utils.checks import check_task_params

        settings = [{k: t.get(k, self.scalars.get(k)) for k in SCALARS} for t in self.tasks]
        protocols = {choose_protocol(s).name for s in settings}
        if len(protocols) > 1:
            raise MibenchError("a sweep runs one protocol: give n for every task (sample protocol) or for none")
        protocol = choose_protocol(settings[0])
        configs = []
        for t, scal in zip(self.tasks, settings):
            entry = TASKS.get(str(t["task"]))
            params_grid = {**self.params, **t.get("params", {})}
            estimators = resolve_estimators(t.get("estimators", self.estimators))
            axes = {key: t.get(key, self.grid.get(key)) for key in AXIS_KEYS}
            axes["mi"] = mi_for_task(entry.name, axes["mi"])     # a fixed-MI task: its own level
            keys = list(params_grid)
            for combo in itertools.product(*[listify(params_grid[k]) for k in keys]):
                params = check_task_params(entry.name, entry.obj, dict(zip(keys, combo)))
                new = protocol.expand(entry.name, params, estimators, axes, scal, self.split_estimators)
                levels = {v for c in new for v in parse_schedule(c["mi"], 10**9).levels}
                reach = getattr(entry.obj, "max_mi", None)        # (most bits, why) without building the task
                for level in sorted(levels):   # a fixed-MI task at another level, or above the task: refused now
                    check_fixed_level(entry.name, level)
                    if reach is not None:
                        check_mi_request(entry.name, level, *reach(**params))
                configs += new
        if not configs:
            raise MibenchError("the sweep has no cells")
        names = protocol.name_cells(configs, bool(self.split_estimators))
        return [Cell(name, cfg) for name, cfg in zip(unique_names(names, configs), configs)]


def unique_names(names: list[str], configs: list[dict]) -> list[str]:
    """Cell names made safe for a file system and unique (a short config hash where two collide)."""
    import re

    from mibench.records import fingerprint

    names = [re.sub(r"[^A-Za-z0-9_.+-]", "-", n) for n in names]
    seen: dict[str, int] = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
    out = [n + "_" + fingerprint(c)[:8] if seen[n] > 1 else n for n, c in zip(names, configs)]
    if len(set(out)) != len(out):
        raise MibenchError("the sweep contains the same cell twice (duplicate values in an axis?)")
    return out


def _table(value, what: str) -> dict:
    """A config table (a mapping) as a dict, an absent one as {}; anything else is one line."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MibenchError(f"{what} must be a table (key = value pairs), got {value!r}")
    return dict(value)


def load_spec(path) -> SweepSpec:
    """Read a TOML (``.toml``) or YAML (``.yaml`` / ``.yml``) sweep config."""
    path = Path(path)
    if not path.is_file():
        raise MibenchError(f"sweep config not found: {path}")
    text = path.read_text()
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        data = _load_yaml(text, path)
    elif suffix == ".toml":
        data = _load_toml(text, path)
    else:
        try:
            data = _load_toml(text, path)
        except MibenchError:
            data = _load_yaml(text, path)
    if not isinstance(data, dict):
        raise MibenchError(f"{path}: a sweep config must be a table / mapping at the top level, "
                           f"got {type(data).__name__}")
    return SweepSpec.from_dict(data, name=data.get("name") or path.stem)


def _load_toml(text, path):
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MibenchError(f"{path}: not valid TOML: {exc}") from None


def _load_yaml(text, path):
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        """The safe loader, refusing a key given twice in one mapping (PyYAML keeps the last one
        silently, so a sweep would run a setting other than the one the user read first)."""

        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, (str, int, float, bool)):
                    continue        # an unhashable key: the base class gives its own error
                if key in seen:
                    raise MibenchError(f"{path}: key {key!r} is given twice in one mapping "
                                       f"(line {key_node.start_mark.line + 1})")
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 -- a SafeLoader subclass
    except yaml.YAMLError as exc:
        msg = str(exc).replace("\n", " ")
        raise MibenchError(f"{path}: not valid YAML: {msg}") from None


def dump_spec_yaml(spec: SweepSpec) -> str:
    import yaml

    return yaml.safe_dump(spec.to_dict(), sort_keys=False, default_flow_style=None, allow_unicode=True, width=100)


def shorthand_name(spec_dict: dict) -> str:
    """Deterministic directory name for a sweep given on the command line (same command -> same dir)."""
    import hashlib
    import json

    tasks = "+".join(t["task"] if isinstance(t, dict) else str(t) for t in spec_dict.get("tasks", []))
    digest = hashlib.sha256(json.dumps(spec_dict, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"{tasks}-{digest}"
