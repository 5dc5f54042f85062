"""Words for the operating system's refusals to write a file, for one-line error messages."""

from __future__ import annotations


def why_not_writable(error: OSError) -> str:
    """The OS error in words a person can act on (mkdir's "File exists" names the wrong thing)."""
    if isinstance(error, FileExistsError | NotADirectoryError):
        return "part of the path is a file, not a folder"
    return str(error.strerror or error)
