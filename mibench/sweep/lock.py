"""One driver per sweep directory: an OS file lock beside it (:func:`sweep_lock`)."""
from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

from mibench.errors import MibenchError


def lock_path(out_dir: Path) -> Path:
    """The sweep's lock file: beside the sweep directory (so --overwrite can remove the directory), named
    after its resolved path, so that a symlink or another spelling of the same directory finds the same
    lock (a second driver through a symlink ran beside the first)."""
    real = Path(os.path.realpath(out_dir))
    return real.parent / f".{real.name}.sweep-lock"


@contextlib.contextmanager
def sweep_lock(out_dir: Path):
    """One driver per sweep directory (a second one would redo the first one's running cells).

    An OS file lock (``filelock``: ``flock`` on POSIX, ``LockFileEx`` on Windows) on a file beside
    the directory: the OS drops it when its holder dies, however it dies, so a killed driver's lock
    is never stale.  The lock file records its holder (``host:pid``) for the error message."""
    from filelock import FileLock, Timeout

    path = lock_path(out_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MibenchError(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    holder_path = path.with_suffix(".holder")
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        try:
            holder = holder_path.read_text().strip()
        except OSError:
            holder = ""
        raise MibenchError(f"{out_dir} is being swept by {holder or 'another process'} "
                           "(one driver per sweep directory; wait for it or stop it)") from None
    except OSError as exc:
        raise MibenchError(f"cannot lock {out_dir}: {exc.strerror or exc}") from None
    try:
        with contextlib.suppress(OSError):
            tmp = holder_path.with_name(f"{holder_path.name}.{os.getpid()}.tmp")
            tmp.write_text(f"{socket.gethostname()}:{os.getpid()}")
            os.replace(tmp, holder_path)
        yield
    finally:
        with contextlib.suppress(OSError):
            holder_path.unlink()
        lock.release()


def driver_alive(out_dir: Path) -> bool:
    """Whether a driver holds the sweep's lock now: a manifest left ``running`` by a driver that was
    killed outright (SIGKILL, a lost node) is stale once nothing holds it, since the OS dropped the lock
    with its holder.  Taking the free lock for this test and releasing it at once leaves it as it was."""
    from filelock import FileLock, Timeout

    path = lock_path(out_dir)
    if not path.is_file():
        return False
    try:
        holder = path.with_suffix(".holder").read_text().strip()
    except OSError:
        holder = ""
    if holder and holder.rsplit(":", 1)[0] != socket.gethostname():
        return True             # held from another host: an OS lock over a network file system may not show it
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        return True
    except OSError:
        return False
    lock.release()
    return False
