"""perdollar's command line for the tests: in this process by default, in a fresh interpreter where
the process itself is what a test is about.

:func:`run_perdollar` calls the CLI's entry point here, with descriptors 1 and 2 pointed at files
(so what children it starts print is captured too, as a pipe would have it), the environment,
working directory, warning filters and the CLI's own state set for the one call and restored
after it. It answers as :func:`subprocess.run` does, so a test reads ``returncode``, ``stdout``
and ``stderr`` either way. :func:`run_perdollar_process` starts a fresh interpreter: for the
modules a run imports, signals, timeouts of the whole process, the sandbox's children and
concurrent writers.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


def _environment(store: Path | None, columns: int, env: Mapping[str, str] | None) -> dict[str, str]:
    merged = {**os.environ, **(env or {}), "COLUMNS": str(columns)}
    if store is not None:
        merged["PERDOLLAR_STORE"] = f"sqlite:///{store}"
    return merged


def run_perdollar(*args: str, store: Path | None = None, cwd: Path | None = None, timeout: float = 300,
                  columns: int = 300, env: Mapping[str, str] | None = None,
                  input: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``perdollar ARGS`` run in this process, its output captured.

    ``store``: a SQLite file for PERDOLLAR_STORE; ``env``: variables set for this call (on top of
    this process's); ``input``: what the command reads on stdin. ``timeout`` is kept for the
    signature's sake: pytest-timeout bounds an in-process run.
    """
    del timeout
    from perdollar.cli import main

    with _process_state(_environment(store, columns, env), cwd), _captured(input) as captured:
        try:
            main(list(args))
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if isinstance(stop.code, str):
                sys.stderr.write(stop.code + "\n")
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.flush()
                sys.stderr.flush()
        out, err = captured.texts()
    return subprocess.CompletedProcess(["perdollar", *args], code, out, err)


# The escape sequences a terminal reads as styles and cursor moves (what it shows is the text between).
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_perdollar_in_terminal(*args: str, columns: int = 80, env: Mapping[str, str] | None = None,
                              **kwargs: Any) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``perdollar ARGS`` as a terminal ``columns`` wide shows it: Rich takes descriptor 1 for a
    terminal (TTY_COMPATIBLE=1) and reads its width from COLUMNS; the escape sequences that style
    the text are taken out of what is returned."""
    done = run_perdollar(*args, columns=columns, env={**(env or {}), "TTY_COMPATIBLE": "1"}, **kwargs)
    return subprocess.CompletedProcess(
        done.args, done.returncode, _ESCAPES.sub("", done.stdout), _ESCAPES.sub("", done.stderr)
    )


def run_perdollar_process(*args: str, store: Path | None = None, cwd: Path | None = None,
                          timeout: float = 300, columns: int = 300, env: Mapping[str, str] | None = None,
                          input: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``perdollar ARGS`` in a fresh interpreter, as a user's shell starts it."""
    return subprocess.run(
        [sys.executable, "-c", "from perdollar.cli import main; main()", *args],
        capture_output=True, text=True, timeout=timeout, env=_environment(store, columns, env), cwd=cwd,
        input=input, stdin=None if input is not None else subprocess.DEVNULL,
    )  # fmt: skip


@contextlib.contextmanager
def _process_state(environment: dict[str, str], cwd: Path | None) -> Iterator[None]:
    """The environment, folder, warning filters, logging and CLI state of a fresh process, for one call."""
    from perdollar.cli import common

    saved_environment = dict(os.environ)
    saved_folder = os.getcwd()
    saved_state = dict(vars(common.STATE))
    saved_argv = sys.argv
    # No handler on the root logger, as in a fresh interpreter: pytest's log capture would take a
    # library's records before perdollar's stand-in for logging's last resort could hold them.
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    for handler in saved_handlers:
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    os.environ.clear()
    os.environ.update(environment)
    sys.argv = ["perdollar"]
    try:
        if cwd is not None:
            os.chdir(cwd)
        with warnings.catch_warnings():
            # A fresh interpreter's filters: every warning shown once per place, deprecations hidden.
            warnings.resetwarnings()
            warnings.simplefilter("default")
            for quiet in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", quiet)
            yield
    finally:
        os.chdir(saved_folder)
        os.environ.clear()
        os.environ.update(saved_environment)
        sys.argv = saved_argv
        for handler in root.handlers[:]:
            root.removeHandler(handler)
        for handler in saved_handlers:
            root.addHandler(handler)
        root.setLevel(saved_level)
        vars(common.STATE).clear()
        vars(common.STATE).update(saved_state)


class _Captured:
    """What one call wrote to descriptors 1 and 2, read back once the call is over."""

    def __init__(self, out: Any, err: Any) -> None:
        self._files = (out, err)

    def texts(self) -> tuple[str, str]:
        texts = []
        for handle in self._files:
            handle.seek(0)
            texts.append(handle.read().decode("utf-8", errors="replace"))
        return texts[0], texts[1]


@contextlib.contextmanager
def _captured(input: str | None) -> Iterator[_Captured]:
    """Descriptors 0, 1 and 2 and ``sys.std*`` on files of this call's own, as a pipe would be."""
    with tempfile.TemporaryFile() as stdin_file, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:  # fmt: skip
        stdin_file.write((input or "").encode())
        stdin_file.seek(0)
        streams = (sys.stdin, sys.stdout, sys.stderr)
        for stream in streams[1:]:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        saved = [os.dup(fd) for fd in (0, 1, 2)]
        try:
            for fd, target in ((0, stdin_file), (1, out), (2, err)):
                os.dup2(target.fileno(), fd)
            sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
            yield _Captured(out, err)
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            sys.stdin, sys.stdout, sys.stderr = streams
            for fd, copy in zip((0, 1, 2), saved, strict=True):
                os.dup2(copy, fd)
                os.close(copy)


_LOADED_MARK = "modules loaded: "


def modules_loaded_by(*args: str, timeout: float = 300) -> set[str]:
    """The modules ``perdollar ARGS`` had imported when it exited (it must exit 0)."""
    script = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: sys.stderr.write({_LOADED_MARK!r} + json.dumps(sorted(sys.modules))))\n"
        "from perdollar.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stderr.rsplit(_LOADED_MARK, 1)[1]))
