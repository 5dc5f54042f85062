"""Files and folders the user names on the command line (``--out``), made or written with a
one-line error instead of a traceback when the place cannot be written."""

from __future__ import annotations

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
