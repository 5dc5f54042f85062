"""One streaming request to an OpenAI-compatible LLM server, timed token by token.

vLLM, TGI, SGLang and llama.cpp's server all answer ``POST /v1/completions`` and
``/v1/chat/completions`` with ``"stream": true`` as server-sent events: ``data: {json}`` lines,
each with a piece of the output, and a final ``data: [DONE]``. Every way a request can go wrong
is an outcome here, never an exception: an HTTP error status, no first token or no next token
within the stall limit, the connection closing before ``[DONE]``, the whole request passing its
deadline, or a reply beyond the bounds of :mod:`perdollar.measure.serving.reply` (too large, too
deep, a token count no completion can have).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from perdollar.measure.serving.reply import (
    ACCEPTED_ENCODINGS,
    ReplyRefused,
    event_piece,
    output_count,
    parse_event,
    reply_lines,
    reply_start,
)

Outcome = Literal["ok", "error", "timeout", "stalled", "dropped"]
# A prompt of about one token a word for the usual BPE vocabularies.
_WORDS = ("the", "cost", "of", "a", "token", "depends", "on", "what", "chip", "serves", "it", "and", "how")


@dataclass(frozen=True, slots=True)
class StreamResult:
    """One request: seconds counted from its scheduled send time (queueing in the client counts)."""

    outcome: Outcome
    scheduled_s: float  # offset of the send time from the start of the load step
    ttft_s: float | None  # to the first piece of output
    end_to_end_s: float | None  # to [DONE]
    output_tokens: int
    detail: str = ""

    @property
    def tpot_s(self) -> float | None:
        """Mean time per output token after the first."""
        if self.ttft_s is None or self.end_to_end_s is None or self.output_tokens < 2:
            return None
        return (self.end_to_end_s - self.ttft_s) / (self.output_tokens - 1)


def synthetic_prompt(tokens: int) -> str:
    return " ".join(_WORDS[i % len(_WORDS)] for i in range(max(tokens, 1)))


def request_body(model: str, prompt: str, max_tokens: int, *, chat: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "stream": True,
        "temperature": 0.0,
        # Generate exactly max_tokens where the server honours it (vLLM, SGLang, llama.cpp).
        "ignore_eos": True,
    }
    if chat:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return body


async def stream_completion(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    *,
    scheduled_s: float,
    step_start: float,
    stall_s: float,
) -> StreamResult:
    """Send one streaming request; ``url`` is the full endpoint (…/v1/completions)."""

    def since_schedule() -> float:
        return time.perf_counter() - step_start - scheduled_s

    first: float | None = None
    pieces = 0
    counted: object = None  # the server's own count, as it sent it
    try:
        async with client.stream(
            "POST", url, json=body, headers={"Accept-Encoding": ACCEPTED_ENCODINGS}
        ) as response:
            if response.status_code >= 400:
                text = await reply_start(response, stall_s)
                return StreamResult(
                    "error", scheduled_s, None, None, 0, f"HTTP {response.status_code}: {text}"
                )
            lines = reply_lines(response, stall_s=stall_s, max_tokens=body.get("max_tokens"))
            while True:
                try:
                    line = await anext(lines)
                except StopAsyncIteration:
                    return StreamResult(
                        "dropped", scheduled_s, first, None, pieces, "stream ended before [DONE]"
                    )
                except TimeoutError:
                    where = "first token" if first is None else f"token {pieces + 1}"
                    return StreamResult(
                        "stalled", scheduled_s, first, None, pieces, f"no {where} in {stall_s:g} s"
                    )
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    reported = counted is not None
                    tokens = output_count(
                        counted if reported else pieces, body.get("max_tokens"), reported=reported
                    )
                    return StreamResult("ok", scheduled_s, first, since_schedule(), tokens)
                event = parse_event(payload)
                if isinstance(event, dict) and event.get("error"):
                    return StreamResult("error", scheduled_s, first, None, pieces, str(event["error"])[:200])
                text, count = event_piece(event) if isinstance(event, dict) else ("", None)
                counted = count if count is not None else counted
                if text:
                    pieces += 1
                    if first is None:
                        first = since_schedule()
    except ReplyRefused as refused:
        return StreamResult("error", scheduled_s, first, None, pieces, refused.reason)
    except (httpx.RemoteProtocolError, httpx.ReadError) as error:
        return StreamResult("dropped", scheduled_s, first, None, pieces, f"connection dropped ({error!r})")
    except httpx.TimeoutException as error:
        return StreamResult("timeout", scheduled_s, first, None, pieces, f"timed out ({error!r})")
    except httpx.HTTPError as error:
        return StreamResult("error", scheduled_s, first, None, pieces, f"{type(error).__name__}: {error}")
