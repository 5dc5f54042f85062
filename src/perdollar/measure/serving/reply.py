"""A server's streamed reply read within bounds: its decompressed size, its line length, its JSON depth.

The server under test is not trusted to be sane. A reply compressed a thousandfold (one line that
inflates to gigabytes), an event nested thousands of levels deep, or a token count that is text
fails the one request it arrives in, with the reason, and never the whole run. The reply is
decompressed here, piece by piece, rather than by the HTTP client, so that no piece is larger than
the bound.
"""

from __future__ import annotations

import asyncio
import json
import math
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from perdollar.fmt import format_bytes

# One streamed event carries a token or a few: a few hundred bytes, a few kilobytes with
# log-probabilities. A line of a megabyte is not an event.
MAX_LINE_BYTES = 2**20
# The whole reply, decompressed: a few hundred bytes a token for a hundred thousand tokens.
MAX_REPLY_BYTES = 64 * 2**20
# The deepest part of a chat completion chunk (choices[].logprobs.content[].top_logprobs[].bytes[])
# is seven levels down.
MAX_JSON_DEPTH = 32
# A streamed completion is two lines a token or fewer (an event and the blank line after it); a
# reply of many more lines than the tokens asked for is not a completion, and each line costs time.
LINES_PER_TOKEN = 8
EXTRA_LINES = 1024  # keep-alive comments, the role, usage and [DONE] events
# What the client offers to read (not br or zstd, which it has no bounded decoder for).
ACCEPTED_ENCODINGS = "gzip, deflate"
_PIECE_BYTES = 64 * 2**10


class ReplyRefused(Exception):
    """The reply is beyond a bound or not what an OpenAI-compatible server sends; the request failed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _inflater(response: httpx.Response) -> Any:
    """A zlib decompressor for the reply's Content-Encoding, or None where it is not compressed."""
    codings = [
        c.strip().lower()
        for c in response.headers.get("content-encoding", "").split(",")
        if c.strip().lower() not in ("", "identity")
    ]
    if not codings:
        return None
    if len(codings) > 1:
        raise ReplyRefused(f"the reply is compressed {len(codings)} times over ({', '.join(codings)})")
    if codings[0] not in ("gzip", "x-gzip", "deflate"):
        raise ReplyRefused(f"the reply is compressed as {codings[0][:20]!r}, which is not read")
    return zlib.decompressobj(32 + zlib.MAX_WBITS)  # a gzip or zlib header, found from the data


def _inflated(inflater: Any, chunk: bytes) -> Iterator[bytes]:
    """``chunk`` decompressed in pieces of at most 64 KiB, however much it expands."""
    data = chunk
    while not inflater.eof:  # what follows the end of the compressed data is not read
        try:
            piece = inflater.decompress(data, _PIECE_BYTES)
        except zlib.error as error:
            raise ReplyRefused(f"the reply's compressed data is damaged ({error})") from None
        if piece:
            yield piece
        data = inflater.unconsumed_tail
        if not data and len(piece) < _PIECE_BYTES:
            return


async def reply_pieces(response: httpx.Response, stall_s: float) -> AsyncIterator[bytes]:
    """The reply's body, decompressed, refused once it passes :data:`MAX_REPLY_BYTES`; TimeoutError
    where no byte of it comes for ``stall_s`` seconds."""
    inflater = _inflater(response)
    total = received = 0
    raw = response.aiter_raw()
    while True:
        try:
            chunk = await asyncio.wait_for(anext(raw), timeout=stall_s)
        except StopAsyncIteration:
            return
        received += len(chunk)
        if received > MAX_REPLY_BYTES:  # compressed data that inflates to little counts too
            raise ReplyRefused(f"the reply is more than {format_bytes(MAX_REPLY_BYTES)}")
        for piece in [chunk] if inflater is None else _inflated(inflater, chunk):
            total += len(piece)
            if total > MAX_REPLY_BYTES:
                raise ReplyRefused(f"the reply is more than {format_bytes(MAX_REPLY_BYTES)} decompressed")
            yield piece


async def reply_lines(response: httpx.Response, *, stall_s: float, max_tokens: object) -> AsyncIterator[str]:
    """The reply's lines (server-sent events): each refused once it passes :data:`MAX_LINE_BYTES`,
    and all of them once there are many more than a completion of ``max_tokens`` has."""
    most = (
        LINES_PER_TOKEN * (max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else 1) + EXTRA_LINES
    )
    count = 0
    pending = b""
    async for piece in reply_pieces(response, stall_s):
        lines = (pending + piece).replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        pending = lines.pop()
        if len(pending) > MAX_LINE_BYTES:
            raise ReplyRefused(f"a line of the reply is longer than {format_bytes(MAX_LINE_BYTES)}")
        count += len(lines)
        if count > most:
            raise ReplyRefused(f"the reply has more than {most:,} lines for {max_tokens} tokens asked")
        for line in lines:
            yield line.decode("utf-8", "replace")
    if pending:
        yield pending.decode("utf-8", "replace")


async def reply_start(response: httpx.Response, stall_s: float, size: int = 200) -> str:
    """The first ``size`` bytes of the reply as text (for an error status), whatever its length."""
    kept = b""
    try:
        async for piece in reply_pieces(response, stall_s):
            kept += piece
            if len(kept) >= size:
                break
    except ReplyRefused as refused:
        return refused.reason
    return kept[:size].decode("utf-8", "replace")


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_event(payload: str) -> object:
    """One event's JSON, refused where it is not JSON or nests deeper than :data:`MAX_JSON_DEPTH`."""
    try:
        event = json.loads(payload)
    except RecursionError:
        raise ReplyRefused(f"an event nests its JSON more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError:  # not JSON, or a number of more digits than Python converts
        raise ReplyRefused(f"not JSON: {payload[:80]}") from None
    if _deeper_than(event, MAX_JSON_DEPTH):
        raise ReplyRefused(f"an event nests its JSON more than {MAX_JSON_DEPTH} levels deep")
    return event


def _kind(value: object) -> str:
    names = {dict: "an object", str: "text", bool: "true/false", int: "a number", float: "a number"}
    return names.get(type(value), "null" if value is None else type(value).__name__)


def event_piece(event: dict[str, Any]) -> tuple[str, object]:
    """The output text an event carries and, when it says so, the completion's token count (as sent)."""
    usage = event.get("usage") or {}
    count = usage.get("completion_tokens") if isinstance(usage, dict) else None
    choices = event.get("choices") or []
    if not isinstance(choices, list):
        raise ReplyRefused(f"the reply's choices is {_kind(choices)}, not a list")
    if not choices or not isinstance(choices[0], dict):
        return "", count
    choice = choices[0]
    delta = choice.get("delta") or {}
    text = choice.get("text") or (delta.get("content") if isinstance(delta, dict) else None) or ""
    return str(text), count


def output_count(tokens: object, asked: object, *, reported: bool) -> int:
    """``tokens`` as the output of a completion asked for ``asked`` tokens; refused where no
    completion can have that many (``reported``: the server's own count, not the pieces counted)."""
    where = "the reply's completion_tokens" if reported else "the reply"
    if isinstance(tokens, bool) or not isinstance(tokens, int | float):
        raise ReplyRefused(f"{where} {str(tokens)[:40]!r} is not a count of tokens")
    if not math.isfinite(tokens) or tokens != int(tokens):
        raise ReplyRefused(f"{where} {tokens!r} is not a whole number of tokens")
    if tokens < 1:
        verb = "reports" if reported else "carries"
        raise ReplyRefused(f"{where} {verb} {int(tokens)} output tokens; a completion has at least one")
    if reported and isinstance(asked, int) and tokens > asked:
        raise ReplyRefused(f"{where} reports {int(tokens)} output tokens, more than the {asked} asked for")
    return int(tokens)
