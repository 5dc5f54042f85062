"""The model server's ASGI app: Starlette routes plus a raw fast path for the no-op endpoint.

``POST /predict`` runs one forward pass of the workload at the server's batch size on a single
worker thread (one replica: requests queue for the model as they would on one accelerator).
``GET /noop`` answers from a bare ASGI callable before Starlette's routing, so that measuring the
load generator measures the client and the HTTP server, not the framework.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_NOOP_START = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"text/plain"), (b"content-length", b"2")],
}
_NOOP_BODY = {"type": "http.response.body", "body": b"ok"}


class ModelServerApp:
    """ASGI app; ``run_batch`` is one forward pass (None: a server with only the no-op endpoint)."""

    def __init__(
        self, run_batch: Callable[[], object] | None, *, batch_size: int = 1, workload_name: str = ""
    ) -> None:
        self.run_batch = run_batch
        self.batch_size = batch_size
        self.workload_name = workload_name
        self.requests_served = 0
        # One thread: the model is one replica, and torch already spreads one pass over cores.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="perdollar-model")
        self._router = Starlette(
            routes=[
                Route("/predict", self._predict, methods=["POST"]),
                Route("/healthz", self._health, methods=["GET"]),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/noop":
            await send(_NOOP_START)
            await send(_NOOP_BODY)
            return
        await self._router(scope, receive, send)

    async def _predict(self, request: Request) -> Response:
        await request.body()
        if self.run_batch is None:
            return JSONResponse({"error": "this server has no model loaded"}, status_code=503)
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self.run_batch)
        except Exception as error:  # the workload's failure is the response, not a server crash
            return JSONResponse({"error": f"{type(error).__name__}: {error}"[:500]}, status_code=500)
        self.requests_served += 1
        return Response(json.dumps({"batch_size": self.batch_size}), media_type="application/json")

    async def _health(self, request: Request) -> Response:
        return JSONResponse(
            {
                "ok": True,
                "workload": self.workload_name,
                "batch_size": self.batch_size,
                "model_loaded": self.run_batch is not None,
            }
        )

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
