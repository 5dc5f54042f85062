"""Host fingerprint: the instance type comes from a metadata service, and its absence never hangs."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from perdollar.measure.host import detect_instance_type, host_fingerprint


def _serve(routes: dict[tuple[str, str], tuple[str, dict[str, str]]]) -> Iterator[str]:
    """A metadata service on 127.0.0.1: (method, path) -> (answer, headers the request must carry)."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            answer, required = routes.get((method, self.path), (None, {}))
            if answer is None or any(self.headers.get(k) != v for k, v in required.items()):
                self.send_response(404)
                self.end_headers()
                return
            body = answer.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_PUT(self) -> None:
            self._answer("PUT")

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def aws_metadata() -> Iterator[str]:
    yield from _serve(
        {
            ("PUT", "/latest/api/token"): ("secret-token", {}),
            ("GET", "/latest/meta-data/instance-type"): (
                "g5.xlarge",
                {"X-aws-ec2-metadata-token": "secret-token"},
            ),
        }
    )


@pytest.fixture
def gcp_metadata() -> Iterator[str]:
    yield from _serve(
        {
            ("GET", "/computeMetadata/v1/instance/machine-type"): (
                "projects/1234/machineTypes/a2-highgpu-1g",
                {"Metadata-Flavor": "Google"},
            ),
        }
    )


def test_aws_instance_type_with_an_imdsv2_token(aws_metadata: str) -> None:
    assert detect_instance_type(aws_metadata) == ("g5.xlarge", "aws")


def test_gcp_machine_type(gcp_metadata: str) -> None:
    assert detect_instance_type(gcp_metadata) == ("a2-highgpu-1g", "gcp")


def test_azure_vm_size() -> None:
    path = "/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text"
    for base in _serve({("GET", path): ("Standard_NC24ads_A100_v4", {"Metadata": "true"})}):
        assert detect_instance_type(base) == ("Standard_NC24ads_A100_v4", "azure")


def test_no_metadata_service_is_unknown_and_quick() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    assert detect_instance_type(f"http://127.0.0.1:{port}") == ("unknown", None)
    assert time.monotonic() - started < 5


def test_a_service_that_knows_nothing_is_unknown() -> None:
    for base in _serve({}):
        assert detect_instance_type(base) == ("unknown", None)


def test_probes_can_be_switched_off() -> None:
    assert detect_instance_type("off") == ("unknown", None)


def test_fingerprint_describes_this_host(aws_metadata: str, monkeypatch: pytest.MonkeyPatch) -> None:
    host_fingerprint.cache_clear()
    monkeypatch.setenv("PERDOLLAR_METADATA_URL", aws_metadata)
    try:
        fingerprint = host_fingerprint()
    finally:
        host_fingerprint.cache_clear()
    assert fingerprint.instance_type == "g5.xlarge"
    assert fingerprint.cloud == "aws"
    assert fingerprint.cpu_cores >= 1
    assert fingerprint.memory_gib > 0
    assert "torch" in fingerprint.versions and "python" in fingerprint.versions
