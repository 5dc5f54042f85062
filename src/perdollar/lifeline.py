"""Processes and scratch folders that do not outlive the command that made them.

A benchmark runs in a child process in its own session (so that a timeout can kill a whole
group of ranks), which also means nothing ties its life to perdollar's: killed by SIGTERM or
SIGKILL, perdollar left the child running (forever, when the workload hung) and its scratch
folder on disk. Three ties, each for one way perdollar can end:

* SIGTERM or SIGHUP raise ``SystemExit`` while a child runs, so the ordinary clean-up paths
  (kill the group, delete the folder) run as for Ctrl-C;
* the child asks Linux for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), which covers a
  parent killed by SIGKILL, the one signal nothing can catch;
* a scratch folder carries its owner's process id, and the next run removes the folders of
  owners that no longer exist.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    function: Callable[..., int] = libc.prctl
    return function


# Looked up once here: ``child_preexec`` runs between fork and exec, where loading a library
# could deadlock on a lock another thread held at the fork.
_PRCTL = _load_prctl()


def die_with_parent(parent_pid: int | None) -> None:
    """Have the kernel SIGKILL this process when its parent exits; exit now if it already has."""
    if _PRCTL is None:
        return
    _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)  # the parent died before the request was in place: nobody waits for us


def child_preexec() -> Callable[[], None]:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child dies with this process.

    Linux ties the child to the thread that starts it, so call this from a thread that lives as
    long as the child (the main thread, or one that waits for the child).
    """
    parent = os.getpid()

    def tie() -> None:
        die_with_parent(parent)

    return tie


def _raise_exit(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def termination_raises() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise ``SystemExit`` (in the main thread only, the one
    Python delivers signals to), so ``finally`` blocks kill children and delete folders."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_exit) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_orphaned_folders(prefix: str, parent: Path | None = None) -> list[Path]:
    """Delete ``<prefix><pid>-…`` folders whose process is gone (killed before it could clean up)."""
    removed = []
    where = parent or Path(tempfile.gettempdir())
    for folder in where.glob(f"{prefix}*-*"):
        owner = folder.name[len(prefix) :].split("-", 1)[0]
        if not owner.isdigit() or _alive(int(owner)) or not folder.is_dir() or folder.is_symlink():
            continue
        with contextlib.suppress(OSError):
            if folder.stat().st_uid == os.getuid():
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed


@contextlib.contextmanager
def scratch_folder(prefix: str) -> Iterator[str]:
    """A temporary folder named for this process, deleted on every exit path this process has
    (and by a later run when this process is SIGKILLed)."""
    remove_orphaned_folders(prefix)
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-") as folder:
        yield folder
