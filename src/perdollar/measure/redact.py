"""Obvious secrets out of what a measurement keeps: a command line and the tail of its output are
stored, shown by `perdollar history` and shared with a team's store, and a training command often
carries a token (``--hf-token hf_…``, ``WANDB_API_KEY=…``, a database URL with its password).

Redaction is by shape, so it catches the usual cases, not every secret: values of options and
assignments whose name says token/password/secret/key/credential, passwords in URLs, and the
prefixes well-known providers give their tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MASK = "***"

_SECRET_WORD = r"(?:token|passw(?:or)?d|passwd|secret|api[-_]?key|access[-_]?key|private[-_]?key|credential)"
_SECRET_NAME = rf"[A-Za-z0-9_.-]*{_SECRET_WORD}[A-Za-z0-9_.-]*"
# --token=VALUE, --api-key VALUE (two arguments), HF_TOKEN=VALUE, password: VALUE
_OPTION_WITH_VALUE = re.compile(rf"^(--?{_SECRET_NAME})$", re.IGNORECASE)
# A plain number is a count ("tokens: 4096"), never a secret worth hiding a log line's figure for.
_ASSIGNMENT = re.compile(
    rf"(?<![A-Za-z0-9_])(-{{0,2}}{_SECRET_NAME})(\s*[=:]\s*)(?![0-9.,]+(?:\s|$))(\"[^\"]*\"|'[^']*'|[^\s,;&]+)",
    re.IGNORECASE,
)
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)([^@\s/]+)(@)")
_BEARER = re.compile(r"(\b(?:Bearer|Basic|token)\s+)([A-Za-z0-9._~+/=-]{12,})", re.IGNORECASE)
_KNOWN_TOKENS = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35})\b"
)


def redact_text(text: str) -> str:
    """``text`` with the secrets it obviously holds replaced by ``***``."""
    text = _URL_PASSWORD.sub(rf"\1{MASK}\3", text)
    text = _ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _BEARER.sub(rf"\1{MASK}", text)
    return _KNOWN_TOKENS.sub(MASK, text)


def redact_arguments(argv: Sequence[str]) -> list[str]:
    """A command line with secret values masked, argument by argument (``--token X`` masks X)."""
    redacted: list[str] = []
    hide_next = False
    for argument in argv:
        if hide_next:
            redacted.append(MASK)
            hide_next = False
            continue
        hide_next = bool(_OPTION_WITH_VALUE.match(argument))
        redacted.append(redact_text(argument))
    return redacted
