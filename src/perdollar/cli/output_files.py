"""Files and folders the user names on the command line (``--out``), made or written with a
one-line error instead of a traceback when the place cannot be written."""

from __future__ import annotations

import os
from pathlib import Path

from perdollar.errors import PerdollarError
from perdollar.files import why_not_writable, write_file_safely


def _cannot_write(place: Path, option: str, error: OSError) -> PerdollarError:
    return PerdollarError(
        f"{option} {place}: cannot write there ({why_not_writable(error)})",
        f"give {option} a path in a folder you can write to",
    )


def ensure_folder(folder: Path, option: str) -> Path:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _cannot_write(folder, option, error) from None
    return folder


def write_text_file(path: Path, text: str, option: str, *, overwrite: bool = False) -> None:
    """Write a new file (an existing one only with ``overwrite``), never through a link."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file_safely(path, text, overwrite=overwrite, option=option)
    except OSError as error:
        raise _cannot_write(path, option, error) from None


def refuse_links_under(folder: Path, option: str) -> None:
    """A one-line error if anything under ``folder`` is a symbolic link.

    A command that writes, replaces or deletes files under the folder a user named must not do so
    in the place a link points to (another project's folder, say); the folder itself may be a link.
    """
    if not folder.is_dir():
        return
    for parent, folders, files in os.walk(folder):
        for name in sorted((*folders, *files)):
            path = Path(parent) / name
            if path.is_symlink():
                raise PerdollarError(
                    f"{option} {folder} holds a symbolic link, {path} → {os.readlink(path)}: "
                    "nothing is written through it",
                    f"remove the link, or give {option} a new folder",
                )
