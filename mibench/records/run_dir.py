"""A run directory's ``config.json``: the resolved config, the run's status and who writes it.

``status`` is ``running`` while a process writes the run, then ``complete``, ``interrupted``
(Ctrl-C / SIGTERM) or ``failed`` (with ``error``).  A running run's config.json also names its
writer (``writer``: host, pid, the process's start time) and a ``heartbeat`` the writer refreshes
while it works, so a run whose writer died without a word (SIGKILL, power loss) reads as
``stale`` (:func:`run_status`): on the writer's own host when that process is gone, elsewhere when
the heartbeat is older than :data:`STALE_AFTER_SECONDS`.

A complete run records the SHA-256 of its CSV files (``files``); readers check them
(:func:`verify_files`), so a file damaged after the run (cut off, edited) is refused instead of read.

:func:`claim` decides what ``--out DIR`` means (see its docstring): a new run, a resume, or a refusal.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from mibench.errors import MibenchError, UnreadableInput
from mibench.records.io import file_digest, read_json, write_json

CONFIG = "config.json"
MANIFEST = "sweep.json"
STATUSES = ("running", "complete", "interrupted", "failed", "stale")
STALE_AFTER_SECONDS = 600.0
HEARTBEAT_EVERY_SECONDS = 10.0
#: config fields that do not change a run's numbers, so a finished run is reused across them
IGNORED_FOR_RESUME = ("log_every",)
#: config fields added after runs were recorded, with the value such a run had
ADDED_FIELDS = {"precision": "fp32"}


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


#: config.json's top-level fields a reader relies on, with the types they must have (absent is
#: allowed: runs recorded before a field existed lack it)
HEADER_TYPES = {"protocol": (str,), "status": (str,), "run_id": (str, type(None)), "schedule": (dict,),
                "task_info": (dict,), "environment": (dict,), "files": (dict,), "error": (str, type(None)),
                "failed_estimates": (list,)}


def read_config(run_dir) -> dict:
    """``run_dir/config.json`` as a dict; missing, empty, damaged, not an object, or a field of the
    wrong type (:data:`HEADER_TYPES`, the checksums in ``files``): one :class:`UnreadableInput` line."""
    path = Path(run_dir) / CONFIG
    data = read_json(path, "run config")
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise UnreadableInput(f"{path} is not a mibench run config (no 'config' object)")
    for key, types in HEADER_TYPES.items():
        if key in data and not isinstance(data[key], types):
            want = " or ".join("null" if t is type(None) else {dict: "an object", list: "a list", str: "a string"}[t]
                               for t in types)
            raise UnreadableInput(f"{path} is damaged: {key!r} must be {want}, got {json.dumps(data[key])[:60]}")
    if "status" in data and data["status"] not in STATUSES:
        raise UnreadableInput(f"{path} is damaged: unknown status {data['status']!r} (one of {', '.join(STATUSES)})")
    bad = [k for k, v in (data.get("files") or {}).items() if not isinstance(v, str)]
    if bad:
        raise UnreadableInput(f"{path} is damaged: the checksum of {bad[0]!r} in 'files' is not a string")
    return data


def fingerprint(config: dict) -> str:
    """SHA-256 of a resolved run config (the ``config`` object of config.json), ignoring fields
    that do not change the numbers (:data:`IGNORED_FOR_RESUME`)."""
    config = {**ADDED_FIELDS, **config}
    relevant = {k: v for k, v in config.items() if k not in IGNORED_FOR_RESUME}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()


def config_diff(a: dict, b: dict) -> list[str]:
    """The fields in which two resolved configs differ (ignoring :data:`IGNORED_FOR_RESUME`)."""
    keys = set(a) | set(b)
    return sorted(k for k in keys if k not in IGNORED_FOR_RESUME
                  and a.get(k, ADDED_FIELDS.get(k)) != b.get(k, ADDED_FIELDS.get(k)))


# ---------------------------------------------------------------------------- the writer


@dataclass
class RunHeader:
    """What a run's config.json says about the run when it starts: the schema both protocols fill
    (:class:`RunWriter` adds the status, the writer and the heartbeat; the run adds its outcome at
    the end: wall time, failures, ``finished``, the files' checksums)."""

    protocol: str                 # "stream" | "sample"
    run_id: str | None
    config: dict                  # the resolved config (the protocol's config object as a dict)
    schedule: dict                # the true-MI levels: levels_bits, description (stream: boundaries too)
    task_info: dict               # the task's own account of itself (ds, dr, data source, pools, notes)
    environment: dict             # versions, device, threads, kernels
    details: dict = field(default_factory=dict)   # the protocol's own fields (critics, ceilings, notes / kinds)
    extra: dict = field(default_factory=dict)     # what the caller adds (e.g. rerun_of)
    started: str = field(default_factory=lambda: now_iso())

    def as_config(self) -> dict:
        """config.json's dict at the start of the run (status ``running``)."""
        return {"protocol": self.protocol, "status": "running", "run_id": self.run_id, "config": self.config,
                "schedule": self.schedule, "task_info": self.task_info, "environment": self.environment,
                **self.details, "started": self.started, **self.extra}



def _process_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux), to tell a reused pid
    from the writer; None where /proc is not available."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def writer_identity() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid(), "process_start": _process_start(os.getpid())}


def _writer_alive(writer: dict) -> bool | None:
    """True / False when the writer's liveness can be told from here (same host; a run written
    before writers were recorded has none and counts as dead), else None."""
    if not isinstance(writer, dict):
        return False
    if writer.get("host") != socket.gethostname():
        return None
    pid = writer.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass                                    # alive, another user's
    started = writer.get("process_start")
    return started is None or _process_start(pid) in (None, started)


def run_status(config: dict) -> str:
    """The run's status as a reader should take it: config.json's ``status``, except that a
    ``running`` run whose writer is gone reads as ``stale``."""
    status = config.get("status")
    if status != "running":
        return status if status in STATUSES else "failed"
    alive = _writer_alive(config.get("writer"))
    if alive is False:
        return "stale"
    if alive is None:
        beat = config.get("heartbeat_unix")
        if isinstance(beat, (int, float)) and time.time() - beat > STALE_AFTER_SECONDS:
            return "stale"
    return "running"


class RunWriter:
    """Writes a run's config.json: ``running`` with the writer and a heartbeat, then the end.

    ``beat()`` refreshes the heartbeat at most every :data:`HEARTBEAT_EVERY_SECONDS`; ``finish``
    records the final status (and, for a complete run, the checksums of ``files``)."""

    def __init__(self, out_dir, config: dict):
        self.dir = Path(out_dir)
        self.config = config
        self._last = 0.0

    def start(self) -> "RunWriter":
        self.config.update(status="running", writer=writer_identity())
        self.beat(force=True)
        return self

    def beat(self, force: bool = False) -> None:
        t = time.time()
        if force or t - self._last >= HEARTBEAT_EVERY_SECONDS:
            self._last = t
            self.config.update(heartbeat=now_iso(), heartbeat_unix=round(t, 3))
            write_json(self.dir / CONFIG, self.config)

    def finish(self, status: str, files=(), error: str | None = None) -> None:
        self.config["status"] = status
        for key in ("writer", "heartbeat", "heartbeat_unix"):
            self.config.pop(key, None)
        if error:
            self.config["error"] = error
        if files:
            self.config["files"] = {name: file_digest(self.dir / name) for name in files
                                    if (self.dir / name).is_file()}
        write_json(self.dir / CONFIG, self.config)


def verify_files(run_dir, config: dict, names=None) -> None:
    """Refuse (one :class:`UnreadableInput` line) a file whose SHA-256 differs from the one the
    complete run recorded; runs written before checksums were recorded pass."""
    recorded = config.get("files") or {}
    for name, digest in recorded.items():
        if names is not None and name not in names:
            continue
        path = Path(run_dir) / name
        if not path.is_file():
            raise UnreadableInput(f"{path} is missing (config.json records it as part of the complete run)")
        if file_digest(path) != digest:
            raise UnreadableInput(f"{path} does not match the checksum its run recorded (damaged or edited "
                                  "after the run; re-run it)")


def recorded_file(run_dir, config: dict, name: str) -> Path:
    """``run_dir/name`` for a reader, checked first against the checksum the complete run recorded
    for it (:func:`verify_files`): every reader of a run's file takes it from here, so an edited or
    duplicated row is refused in one :class:`UnreadableInput` line naming the file, never read as a
    number.  A file the run recorded no checksum for (a run still running, interrupted, or written
    before checksums) passes unchecked."""
    verify_files(run_dir, config, names=(name,))
    return Path(run_dir) / name


def verify_present_files(run_dir, config: dict) -> None:
    """:func:`verify_files` for the recorded files still there: one edited or cut short since is one
    :class:`UnreadableInput` line; one removed since passes (kept runs drop the per-step log)."""
    verify_files(run_dir, config, names=[n for n in config.get("files") or {} if (Path(run_dir) / n).is_file()])


def is_complete(run_dir) -> bool:
    """config.json says ``complete`` and summary.csv is there (nothing is verified)."""
    try:
        return read_config(run_dir).get("status") == "complete" and (Path(run_dir) / "summary.csv").is_file()
    except UnreadableInput:
        return False


# ----------------------------------------------------------------------------- --out DIR


@dataclass
class Claim:
    """What :func:`claim` decided for an output directory."""

    mode: str                    # "new" | "resume" | "complete"
    path: Path
    status: str = ""             # the existing run's status (resume / complete)


def _writable(path: Path) -> None:
    probe = path / f".mibench-write-test-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise MibenchError(f"cannot write to {path}: {exc.strerror or exc}") from None


def sweep_cells(cell_configs) -> set[str]:
    """What makes two sweeps the same sweep: the set of their cells' configs (not the spec's wording,
    its name or how it is executed)."""
    return {fingerprint(c) for c in cell_configs}


def claim(out, config, *, resume: bool = False, overwrite: bool = False, kind: str = "run",
          check_only: bool = False) -> Claim:
    """Decide what ``--out DIR`` means for a run (``kind="run"``, ``config`` its resolved config) or
    a sweep (``kind="sweep"``, ``config`` the list of its cells' configs), and prepare the directory.

    * DIR does not exist, or is empty: a new run (created here).
    * DIR holds the same run (:func:`fingerprint`) or sweep (:func:`sweep_cells`), or a sweep whose
      cells are all cells of this one (this sweep extends it, e.g. with more seeds): with ``resume``
      it is continued (``mode="resume"``; ``"complete"`` when there is nothing left to do); without,
      refused in one line naming ``--resume`` and ``--overwrite``.
    * DIR holds a different run or sweep: refused, naming ``--overwrite``.
    * ``overwrite``: an existing run (or sweep) directory is removed first and it starts anew.
    * DIR is a file, holds something that is not a mibench run (or sweep), cannot be created or
      written, or is a run being written by a live process: refused in one line.

    ``check_only`` (a dry run): the same decisions and refusals, with nothing created or removed.
    """
    path = Path(out)
    marker, other = (MANIFEST, CONFIG) if kind == "sweep" else (CONFIG, MANIFEST)
    if path.exists() and not path.is_dir():
        raise MibenchError(f"--out {path} is a file; give a directory")
    if path.is_dir() and any(not p.name.startswith(".") for p in path.iterdir()):
        if (path / other).is_file():
            what = "a run directory" if kind == "sweep" else "a sweep directory"
            raise MibenchError(f"--out {path} is {what}; give a new directory for this {kind}")
        if not (path / marker).is_file():
            raise MibenchError(f"--out {path} exists and is not a mibench {kind} directory; give a new or empty "
                               "directory")
        recorded = _recorded(path, kind, overwrite)     # None: damaged, and --overwrite replaces it
        same, diff, status = _compare(path, kind, recorded, config) if recorded is not None else (False, [], "")
        if overwrite:
            if not check_only:
                shutil.rmtree(path)
        elif not same:
            differ = f" ({', '.join(diff)} differ)" if diff else ""
            # a sample cell holds all its seeds in one run: other seeds are other cells, never more of these
            hint = ("; a sample sweep's cell holds all its seeds, so run the new seeds into another --out and give "
                    "both to mibench leaderboard, which pools the seeds of one setup") if kind == "sweep" and \
                diff == ["seeds"] else ""
            raise MibenchError(f"--out {path} holds a different {kind}{differ}; choose another --out or pass "
                               f"--overwrite to replace it{hint}")
        elif not resume:
            raise MibenchError(f"--out {path} already holds this {kind} ({status}); pass --resume to continue "
                               "it or --overwrite to start it again")
        else:
            if not check_only:
                _writable(path)
            return Claim("complete" if status == "complete" else "resume", path, status)
    if check_only:
        return Claim("new", path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise MibenchError(f"--out {path}: a parent is a file, not a directory") from None
    except OSError as exc:
        raise MibenchError(f"cannot create --out {path}: {exc.strerror or exc}") from None
    _writable(path)
    return Claim("new", path)


def _compare(path: Path, kind: str, recorded: dict, config) -> tuple[bool, list, str]:
    """(same run or a sweep this one extends, the fields that differ, its status) of what ``--out``
    holds; a run being written right now is refused in one line."""
    if kind == "run":
        status = run_status(recorded)
        if status == "running":
            w = recorded.get("writer") or {}
            raise MibenchError(f"--out {path} is being written by {w.get('host')}:{w.get('pid')} right now; "
                               "wait for it or stop it")
        return (fingerprint(recorded["config"]) == fingerprint(config), config_diff(recorded["config"], config),
                status)
    cells = [c.get("config", {}) for c in recorded.get("cells", [])]
    old, new = sweep_cells(cells), sweep_cells(config)
    diff = ["seeds"] if not old <= new and _only_seeds_differ(cells, list(config)) else []
    return old <= new, diff, recorded.get("status", "") if old == new else "this sweep extends it"


def _only_seeds_differ(old: list, new: list) -> bool:
    """Whether two sweeps' sample cells are the same but for their seeds."""
    def strip(cells):
        return sorted(json.dumps({k: v for k, v in c.items() if k != "seeds"}, sort_keys=True, default=str)
                      for c in cells if isinstance(c, dict) and c.get("protocol") == "sample")
    stripped = strip(new)
    return bool(old) and len(old) == len(new) == len(stripped) and strip(old) == stripped


def _recorded(path: Path, kind: str, overwrite: bool = False) -> dict | None:
    """The run's config.json or the sweep's manifest in ``--out``; a damaged one is one
    :class:`UnreadableInput` line (None with ``overwrite``: it is replaced)."""
    try:
        if kind == "run":
            return read_config(path)
        data = read_json(path / MANIFEST, "sweep manifest")
        if not isinstance(data, dict):
            raise UnreadableInput(f"{path / MANIFEST} is not a mibench sweep manifest")
        return data
    except UnreadableInput as exc:
        if overwrite:
            return None
        raise UnreadableInput(f"--out {path}: {exc} (pass --overwrite to replace it)") from None


def unique_dir(parent, name: str) -> Path:
    """``parent/name``, or ``parent/name-2``, ``-3``, ... whichever is created first (atomically), so
    two runs started in the same second never share a default directory."""
    parent = Path(parent)
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MibenchError(f"cannot create {parent}: {exc.strerror or exc}") from None
    for i in range(1, 10_000):
        path = parent / (name if i == 1 else f"{name}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
        except OSError as exc:
            raise MibenchError(f"cannot create {path}: {exc.strerror or exc}") from None
    raise MibenchError(f"too many runs named {name} under {parent}")


# ----------------------------------------------------------------------------- finding runs


def find_run_dirs(paths) -> tuple[list[Path], list[Path], list[Path]]:
    """(complete run dirs, other run dirs, sweep dirs) below ``paths``, sorted; one line for a
    path that does not exist or is a file, and an :class:`UnreadableInput` line for a run directory
    whose config.json is damaged (:func:`read_config`): a damaged record, not an incomplete run.  A
    run is complete when its config.json says so -- the last thing a run writes -- whatever files are
    there: a complete run missing summary.csv is a damaged record its reader refuses (exit 4), not an
    incomplete run to skip."""
    complete, others, sweeps = [], [], []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise MibenchError(f"no such run or sweep directory: {p}")
        if p.is_file():
            raise MibenchError(f"{p} is a file; give run directories or sweep directories")
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            root = Path(root)
            if MANIFEST in files:
                sweeps.append(root)
            if CONFIG in files:     # a damaged config.json is a damaged record, not an incomplete run
                (complete if read_config(root).get("status") == "complete" else others).append(root)
                dirs[:] = []     # a run directory has no run directories inside
    return sorted(set(complete)), sorted(set(others)), sorted(set(sweeps))
