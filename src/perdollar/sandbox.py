"""The user's code runs in a child process, never in perdollar's own.

A workload file is arbitrary Python. At import or in its step it can call ``os._exit``, raise,
segfault, sleep forever or exhaust memory; run in perdollar's process, any of these would end
perdollar with the workload's exit code and no word of why, or hang it past every timeout.
:func:`run_isolated` calls a function in a fresh interpreter under a timeout and turns every way
that child can end into a value or a :class:`UserCodeFailed` with a status (``error``, ``oom``,
``timeout``, ``killed``) and a one-line reason that names the workload's file and line when the
traceback shows them.

The child marks itself (:data:`SANDBOX_MARK`), so code that would otherwise start another child
(the workload loader, the profiler) runs directly there. :func:`run_isolated_with_checkpoint` has
one child do two jobs (load a file, then trace it) and still tell their failures apart.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import pickle
import signal
import subprocess
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from perdollar.errors import EXIT_FAILURE, PerdollarError
from perdollar.lifeline import child_preexec, scratch_folder, termination_raises

SANDBOX_MARK = "PERDOLLAR_SANDBOXED"
DEFAULT_TIMEOUT_S = 300.0
FailureStatus = Literal["error", "oom", "timeout", "killed"]

_FIXES: dict[str, str] = {
    "error": "fix the workload (run the file with python to see the full traceback)",
    "oom": "use a smaller --batch-size, or a machine with more memory",
    "timeout": "find where the workload hangs (at import or in its step); profile and bench take --timeout",
    "killed": "the workload crashed outside Python (a native library?); run it with python to reproduce",
}
_PACKAGE_FOLDER = str(Path(__file__).resolve().parent)
_LIBRARY_FOLDERS = tuple(
    {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
)


class _Usage(TypedDict):
    problem: str
    fix: str | None
    exit_code: int


class _Reply(TypedDict, total=False):
    """What a child writes: the target's ``value``, or how the user's code failed."""

    value: object
    usage: _Usage
    status: FailureStatus
    reason: str
    where: str | None
    traceback: str


class UserCodeFailed(PerdollarError):
    """The user's code ended badly in its child: a result to record, not a usage mistake."""

    exit_code = EXIT_FAILURE

    def __init__(self, status: FailureStatus, what: str, reason: str, where: str | None = None) -> None:
        located = f" at {where}" if where else ""
        super().__init__(f"{what} failed ({status}){located}: {reason}", _FIXES[status])
        self.status: FailureStatus = status
        self.what = what
        self.reason = reason
        self.where = where


def mark_sandboxed() -> None:
    """Say that this process (and every process it starts) is a child that may run user code."""
    os.environ[SANDBOX_MARK] = "1"


def in_sandbox() -> bool:
    """True inside a child started by :func:`run_isolated` (or a benchmark worker)."""
    return os.environ.get(SANDBOX_MARK) == "1"


def user_frame(error: BaseException) -> str | None:
    """``file.py:line`` of the deepest frame of ``error`` outside perdollar and installed libraries."""
    location = None
    for frame in traceback.extract_tb(error.__traceback__):
        path = str(Path(frame.filename).resolve()) if frame.filename else ""
        if not path or path.startswith(_PACKAGE_FOLDER) or path.startswith(_LIBRARY_FOLDERS):
            continue
        if frame.filename.startswith("<"):
            continue
        location = f"{frame.filename}:{frame.lineno}"
    return location


def described(error: BaseException) -> str:
    """``Kind: message``, or the kind alone when the message is empty (a bare MemoryError)."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def status_of(error: BaseException) -> FailureStatus:
    """``oom`` for an exception that says memory ran out, else ``error``."""
    out_of_memory = isinstance(error, MemoryError) or "out of memory" in str(error).lower()
    return "oom" if out_of_memory else "error"


def failure_of(error: BaseException) -> _Reply:
    """What the child reports about an exception that escaped the user's code."""
    if isinstance(error, UserCodeFailed):
        return {"status": error.status, "reason": error.reason, "where": error.where}
    if isinstance(error, PerdollarError):
        return {"usage": {"problem": error.problem, "fix": error.fix, "exit_code": error.exit_code}}
    if isinstance(error, SystemExit):
        reason = f"the workload called sys.exit({error.code!r})"
        status: FailureStatus = "error"
    else:
        reason, status = described(error), status_of(error)
    return {
        "status": status,
        "reason": reason[:500],
        "where": user_frame(error),
        "traceback": "".join(traceback.format_exception(error))[-4000:],
    }


def ended_without_result(returncode: int, output_tail: str) -> tuple[FailureStatus, str]:
    """Status and reason when the child ended without writing its result."""
    if returncode < 0:
        name = signal.Signals(-returncode).name
        if -returncode == signal.SIGKILL:
            return "oom", f"killed by {name}, most likely by the kernel's out-of-memory killer"
        return "killed", f"the process died of {name}"
    last = next((line for line in reversed(output_tail.splitlines()) if line.strip()), "")
    reason = f"the process exited with code {returncode} before returning"
    return "error", reason + (f" (last output: {last.strip()[:200]})" if last else "")


def run_isolated(
    target: str, arguments: Mapping[str, object], *, what: str, timeout_s: float | None = None
) -> Any:
    """``module:function(**arguments)`` in a fresh interpreter; its (picklable) return value, of
    the type ``target`` returns (named by a string, so the caller states it).

    Raises :class:`UserCodeFailed` for every way the child can fail, and re-raises a
    :class:`PerdollarError` the child raised (a usage problem found while loading, say).
    """
    timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    return _run_child(target, arguments, timeout, watch_checkpoint=False).value(what, timeout)


@dataclass(frozen=True)
class Rest:
    """How the work after a child's :func:`checkpoint` ended: its value, or the failure
    :func:`run_isolated` would have raised for it, kept for the caller to raise when it needs it."""

    value: Any = None  # unpickled from the child: of the type its target returns
    failure: PerdollarError | None = None


def run_isolated_with_checkpoint(
    target: str, arguments: Mapping[str, object], *, what: str, rest_what: str, timeout_s: float | None = None
) -> tuple[Any, Rest]:
    """Two jobs in one interpreter: ``target`` calls :func:`checkpoint` with the first one's value
    and returns the second's. That value comes back, and the second's end as a :class:`Rest`.

    Up to the checkpoint the child fails as :func:`run_isolated` would (named ``what``); after it,
    as a child doing only the rest would (named ``rest_what``). Each part has ``timeout_s``.
    """
    timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    ended = _run_child(target, arguments, timeout, watch_checkpoint=True)
    if ended.checkpoint is None or "value" not in ended.checkpoint:
        replace(ended, reply=ended.checkpoint or ended.reply).value(what, timeout)
        raise UserCodeFailed("error", what, "the process returned before its checkpoint")
    try:
        return ended.checkpoint["value"], Rest(value=ended.value(rest_what, timeout))
    except PerdollarError as failure:
        return ended.checkpoint["value"], Rest(failure=failure)


def checkpoint(value: object) -> None:
    """In a child of :func:`run_isolated_with_checkpoint`: hand ``value`` to the parent now, so
    that a failure of the work still to come is not taken for a failure of what came before."""
    if _CHECKPOINT_FILE:
        _write_whole(Path(_CHECKPOINT_FILE[0]), pickle.dumps({"value": value}))


@dataclass(frozen=True)
class _Ended:
    """What a child left: its reply and checkpoint (None: none written) and how it ended."""

    reply: _Reply | None
    checkpoint: _Reply | None
    timed_out: bool
    returncode: int
    tail: str

    def value(self, what: str, timeout: float) -> Any:
        """The reply's value, or the failure it reports (or the child's end tells) raised."""
        reply = self.reply
        if reply is not None and "value" in reply:
            return reply["value"]
        if reply is not None and "usage" in reply:
            usage = reply["usage"]
            raise PerdollarError(usage["problem"], usage["fix"], exit_code=usage["exit_code"])
        if reply is not None:
            raise UserCodeFailed(reply["status"], what, reply["reason"], reply["where"])
        if self.timed_out:
            raise UserCodeFailed("timeout", what, f"no result within the {timeout:g} s timeout")
        status, reason = ended_without_result(self.returncode, self.tail)
        raise UserCodeFailed(status, what, reason)


_CHECKPOINT_POLL_S = 0.05


def _run_child(
    target: str, arguments: Mapping[str, object], timeout: float, *, watch_checkpoint: bool
) -> _Ended:
    with termination_raises(), scratch_folder("perdollar-sandbox-") as scratch:
        request, result = Path(scratch, "request.pickle"), Path(scratch, "result.pickle")
        marker = Path(scratch, "checkpoint.pickle")
        request.write_bytes(pickle.dumps((target, arguments)))
        process = subprocess.Popen(
            [sys.executable, "-m", "perdollar.sandbox", str(request), str(result), str(marker)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, SANDBOX_MARK: "1"},
            start_new_session=True,  # a timeout kills whatever the workload started too
            preexec_fn=child_preexec(),  # and it dies with us
        )
        # stdout=PIPE in binary mode: Popen gives a buffered reader.
        echo = _Echo(cast(io.BufferedReader, process.stdout))
        try:
            timed_out = not _waited(process, timeout, marker if watch_checkpoint else None)
        finally:
            _kill_group(process)
            echo.thread.join(timeout=2)
        return _Ended(
            _read_reply(result) if result.exists() else None,
            _read_reply(marker) if watch_checkpoint and marker.exists() else None,
            timed_out, process.returncode, echo.tail(),
        )  # fmt: skip


def _waited(process: subprocess.Popen[bytes], timeout: float, marker: Path | None) -> bool:
    """Whether ``process`` ended in time; once ``marker`` appears, the rest gets its own ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        if marker is not None and marker.exists():
            deadline, marker = time.monotonic() + timeout, None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=remaining if marker is None else min(remaining, _CHECKPOINT_POLL_S))
            return True


class _Echo:
    """Copies what the user's code prints to perdollar's stderr (never stdout, which may hold a
    --json document) and keeps the end of it for the reason of a failure."""

    def __init__(self, stream: io.BufferedReader) -> None:
        self._stream = stream
        self._tail = b""
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for chunk in iter(lambda: self._stream.read1(65536), b""):
            self._tail = (self._tail + chunk)[-4000:]
            try:
                sys.stderr.write(chunk.decode("utf-8", errors="replace"))
                sys.stderr.flush()
            except (OSError, ValueError):  # a closed stderr must not stop the draining
                pass

    def tail(self) -> str:
        return self._tail.decode("utf-8", errors="replace")


class _PlainUnpickler(pickle.Unpickler):
    """Reads only plain data: Python's containers and values, and perdollar's own records.

    The reply was written by a process that ran the user's code, which could have put any pickle
    there. A pickle calls what it names with arguments of its choosing, so a name that is a
    function (``builtins.exec``, ``os.system``, any of perdollar's own) would run code here, in
    perdollar's process. Only data types are built: a few of the standard library's, and
    perdollar's records (dataclasses, named tuples, enums, its errors) from modules that
    importing runs nothing (never ``perdollar.__main__``).
    """

    def find_class(self, module: str, name: str) -> object:
        if (module, name) in _PLAIN_NAMES:
            return super().find_class(module, name)
        if (module == "perdollar" or module.startswith("perdollar.")) and module != "perdollar.__main__":
            found = super().find_class(module, name)
            if _is_record_type(found):
                return found
        raise pickle.UnpicklingError(f"the reply names {module}.{name}, which perdollar does not read")


def _is_record_type(found: object) -> bool:
    import dataclasses
    import enum

    return isinstance(found, type) and (
        dataclasses.is_dataclass(found) or issubclass(found, enum.Enum | tuple | PerdollarError)
    )


_PLAIN_NAMES = frozenset(
    {
        *(("builtins", name) for name in ("set", "frozenset", "slice", "complex", "bytearray", "range")),
        *(("builtins", name) for name in ("list", "dict", "tuple", "int", "float", "str", "bytes", "bool")),
        *(("collections", name) for name in ("OrderedDict", "defaultdict", "deque", "Counter")),
        *(("datetime", name) for name in ("date", "datetime", "time", "timedelta", "timezone")),
        *(
            ("pathlib", name)
            for name in ("Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath", "PureWindowsPath")
        ),
        ("copyreg", "_reconstructor"),
    }
)


def _read_reply(path: Path) -> _Reply:
    try:
        # The child wrote it with failure_of or _child; the unpickler built only plain data.
        reply: _Reply = _PlainUnpickler(io.BytesIO(path.read_bytes())).load()
    except Exception as error:  # whatever the file holds, it is the child's failure, not ours
        return {"status": "error", "reason": f"its reply could not be read ({type(error).__name__}: {error})",
                "where": None}  # fmt: skip
    return reply


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # Also after a normal exit: processes the workload started may still hold the group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


# Where :func:`checkpoint` writes, set in the child only (a list: the module's state stays put).
_CHECKPOINT_FILE: list[str] = []


def _write_whole(path: Path, payload: bytes) -> None:
    """The parent sees the whole file or none: a child killed midway leaves no half reply."""
    partial = Path(str(path) + ".partial")
    partial.write_bytes(payload)
    os.replace(partial, path)


def _child(request_path: str, result_path: str, checkpoint_path: str) -> None:
    _CHECKPOINT_FILE.append(checkpoint_path)
    target, arguments = pickle.loads(Path(request_path).read_bytes())
    try:
        module_name, _, function_name = target.partition(":")
        value = getattr(importlib.import_module(module_name), function_name)(**arguments)
        reply: _Reply = {"value": value}
        payload = pickle.dumps(reply)
    except BaseException as error:  # whatever the user's code does, it is the answer
        payload = pickle.dumps(failure_of(error))
    _write_whole(Path(result_path), payload)


if __name__ == "__main__":
    # Through the package's module, not this ``__main__`` copy: the error classes must be the
    # ones the user's code and the loader raise.
    from perdollar.sandbox import _child as child

    child(sys.argv[1], sys.argv[2], sys.argv[3])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip teardown: threads the workload left behind must not hang the exit
