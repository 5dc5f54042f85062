"""A small OpenAI-compatible streaming server for tests: known delays, and told to fail on demand.

It answers /v1/completions and /v1/chat/completions with server-sent events, one token every
``token_delay_s`` after ``first_token_delay_s``, each request independently (no batching, so
latencies are the delays whatever the load). ``behaviour`` makes it fail: "error" answers 500,
"stall" sends one token and then nothing, "drop" closes the connection after two tokens. It
listens on 127.0.0.1 only and stops by itself after ``max_seconds``. :func:`replying_server`
answers every request with the same bytes, however malformed.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


class _Drop(Exception):
    """Raised inside the stream: uvicorn closes the connection without ending the response."""


def make_app(first_token_delay_s: float, token_delay_s: float, behaviour: str) -> Starlette:
    async def completions(request: Request) -> Response:
        body = await request.json()
        if behaviour == "error":
            return JSONResponse({"error": {"message": "model overloaded"}}, status_code=500)
        chat = request.url.path.endswith("/chat/completions")
        count = int(body.get("max_tokens", 16))

        async def events() -> AsyncIterator[bytes]:
            await asyncio.sleep(first_token_delay_s)
            for index in range(count):
                if index:
                    await asyncio.sleep(token_delay_s)
                if behaviour == "stall" and index == 1:
                    await asyncio.sleep(3600)
                if behaviour == "drop" and index == 2:
                    raise _Drop
                choice = (
                    {"index": 0, "delta": {"content": f" t{index}"}}
                    if chat
                    else {"index": 0, "text": f" t{index}"}
                )
                yield f"data: {json.dumps({'choices': [choice]})}\n\n".encode()
            usage = {"completion_tokens": count, "prompt_tokens": 1}
            yield f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(
        routes=[
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/chat/completions", completions, methods=["POST"]),
        ]
    )


@contextmanager
def streaming_server(
    first_token_delay_s: float = 0.05,
    token_delay_s: float = 0.01,
    behaviour: str = "ok",
    max_seconds: float = 60.0,
) -> Iterator[str]:
    """Yield the server's base URL (http://127.0.0.1:PORT/v1) while it runs in a thread."""
    with _serving(make_app(first_token_delay_s, token_delay_s, behaviour), max_seconds) as url:
        yield url


@contextmanager
def replying_server(
    body: bytes, headers: dict[str, str] | None = None, max_seconds: float = 60.0
) -> Iterator[str]:
    """A server that answers every completion with ``body`` as it is (headers such as
    Content-Encoding included): a reply no engine would send, for the client's bounds."""

    async def completions(request: Request) -> Response:
        await request.body()
        return Response(body, media_type="text/event-stream", headers=headers)

    app = Starlette(
        routes=[Route(p, completions, methods=["POST"]) for p in ("/v1/completions", "/v1/chat/completions")]
    )
    with _serving(app, max_seconds) as url:
        yield url


@contextmanager
def _serving(app: Starlette, max_seconds: float) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="critical",
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    stopper = threading.Timer(max_seconds, lambda: setattr(server, "should_exit", True))
    stopper.daemon = True
    stopper.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stopper.cancel()
        server.should_exit = True
        thread.join(timeout=5)
