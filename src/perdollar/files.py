"""Writing the files a user names, and words for the operating system's refusals to write them,
for one-line error messages."""

from __future__ import annotations

import contextlib
import os
import tempfile
from importlib import metadata
from pathlib import Path

from perdollar.errors import PerdollarError


def why_not_writable(error: OSError) -> str:
    """The OS error in words a person can act on (mkdir's "File exists" names the wrong thing)."""
    if isinstance(error, FileExistsError | NotADirectoryError):
        return "part of the path is a file, not a folder"
    return str(error.strerror or error)


def write_file_safely(path: Path, text: str, *, overwrite: bool, option: str = "--out") -> None:
    """Write ``text`` to ``path`` without following a link and, unless ``overwrite``, without
    replacing a file that is there.

    The text goes to a new file beside the target (created exclusively, so a planted link is
    never followed) and is renamed over it, which replaces a name, never what a link points to:
    a link in the target folder cannot make perdollar write outside it.
    """
    if path.is_symlink():
        raise PerdollarError(
            f"{option} {path} is a symbolic link; perdollar does not write through links",
            "remove the link or give a path that is not one",
        )
    if path.exists() and not overwrite:
        raise PerdollarError(
            f"{option} {path} already exists", "pass --force to replace it, or give a new path"
        )
    if path.exists() and not path.is_file():
        raise PerdollarError(f"{option} {path} is not a file", "give the path of a file to write")
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def readable_file(path: Path, what: str) -> Path:
    """``path`` if it is a file this process can read; else the one-line error that says why."""
    shown = shorten(str(path))
    try:
        is_folder, exists = path.is_dir(), path.exists()
    except OSError as error:  # a name too long for the file system, say
        raise PerdollarError(
            f"{what} {shown} cannot be looked at ({error.strerror})", "check the path"
        ) from None
    if is_folder:
        raise PerdollarError(f"{what} {shown} is a folder", "give a file, not a folder")
    if not exists:
        raise PerdollarError(f"{what} {shown} does not exist", "check the path")
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except OSError as error:
        reason = why_not_writable(error)
        raise PerdollarError(f"cannot read {what} {shown} ({reason})", "check its permissions") from None
    return path


def shorten(text: str, limit: int = 120) -> str:
    """``text`` cut in its middle to at most ``limit`` characters, for one-line messages."""
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return f"{text[:keep]}…{text[-keep:]}"


def installed_version(package: str) -> str:
    """The installed version of ``package`` without importing it ("absent" when it is not there)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"
