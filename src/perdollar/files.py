"""Reading and writing the files a user names, and words for the operating system's refusals,
for one-line error messages."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from importlib import metadata
from pathlib import Path

from perdollar.errors import PerdollarError
from perdollar.fmt import format_bytes


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


def _kind_of(mode: int) -> str:
    """What a file that is neither a folder nor a regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _refuse_unless_regular(
    status: os.stat_result, what: str, shown: str, max_bytes: int, fix: str, smaller: str
) -> None:
    if stat.S_ISDIR(status.st_mode):
        raise PerdollarError(f"{what} {shown} is a folder, not a regular file", fix)
    if not stat.S_ISREG(status.st_mode):
        kind = _kind_of(status.st_mode)
        raise PerdollarError(
            f"{what} {shown} is {kind}, not a regular file", f"save it to a file first; {fix}"
        )
    if status.st_size > max_bytes:
        _refuse_size(what, shown, max_bytes, f"{format_bytes(status.st_size)}, more than", smaller)


def _refuse_size(what: str, shown: str, max_bytes: int, how_large: str, smaller: str) -> None:
    limit = format_bytes(max_bytes)
    raise PerdollarError(f"{what} {shown} is {how_large} the {limit} perdollar reads", smaller)


def checked_user_file(
    path: Path, what: str, max_bytes: int, fix: str, smaller: str = "give a smaller file"
) -> Path:
    """``path`` if it names a regular file of at most ``max_bytes``; else the one-line error.

    For a file another reader opens (an importer, a parser that wants a path): the file is looked
    at, never opened, so a named pipe cannot hold the command up.
    """
    shown = shorten(str(path))
    try:
        status = path.stat()
    except FileNotFoundError:
        raise PerdollarError(f"{what} {shown} does not exist", f"check the path, or {fix}") from None
    except OSError as error:  # a name too long for the file system, a folder that cannot be entered
        raise PerdollarError(
            f"{what} {shown} cannot be looked at ({error.strerror or error})", "check the path"
        ) from None
    _refuse_unless_regular(status, what, shown, max_bytes, fix, smaller)
    return path


def read_user_bytes(
    path: Path, what: str, max_bytes: int, fix: str, smaller: str = "give a smaller file"
) -> bytes:
    """The bytes of the file a user named: a regular file of at most ``max_bytes``, else a one-line
    error that names ``what`` (the option or kind of file) and, in ``fix``, what to give instead.

    A pipe, device or socket is refused before it is opened (opening a named pipe waits for a
    writer); the file is opened without waiting all the same and looked at again once open, so
    one swapped in between is refused too. At most ``max_bytes`` + 1 bytes are read, so a file
    that grows while it is read costs no more memory than the limit.
    """
    shown = shorten(str(path))
    checked_user_file(path, what, max_bytes, fix, smaller)
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        reason = why_not_writable(error)
        raise PerdollarError(f"cannot read {what} {shown} ({reason})", "check its permissions") from None
    with os.fdopen(handle, "rb") as stream:
        _refuse_unless_regular(os.fstat(stream.fileno()), what, shown, max_bytes, fix, smaller)
        try:
            data = stream.read(max_bytes + 1)
        except OSError as error:
            raise PerdollarError(
                f"cannot read {what} {shown} ({why_not_writable(error)})", "check the file"
            ) from None
    if len(data) > max_bytes:
        _refuse_size(what, shown, max_bytes, "more than", smaller)
    return data


def read_user_text(
    path: Path, what: str, max_bytes: int, fix: str, smaller: str = "give a smaller file"
) -> str:
    """:func:`read_user_bytes` decoded as UTF-8."""
    data = read_user_bytes(path, what, max_bytes, fix, smaller)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise PerdollarError(f"{what} {shorten(str(path))} is not UTF-8 text", fix) from None


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
