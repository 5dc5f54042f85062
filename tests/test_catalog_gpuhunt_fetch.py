"""The network edge of the gpuhunt refresh, against gpuhunt itself and a local server of recorded files.

gpuhunt downloads ``{base}/{provider}/version`` and ``{base}/{provider}/{version}/catalog.zip``; a
server on 127.0.0.1 answers with the recorded catalog in tests/fixtures/gpuhunt (and 404 for the
providers it has no file for, as a provider that is down).
"""

from __future__ import annotations

import datetime as dt
import http.server
import io
import socket
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.catalog.gpuhunt_rows import fetch_gpuhunt
from perdollar.errors import PerdollarError

pytest.importorskip("gpuhunt")

FIXTURE = Path(__file__).parent / "fixtures" / "gpuhunt"
VERSION = "20261119-1200"


class _Recorded(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # Vast.ai's marketplace search
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = (FIXTURE / "vastai_bundles.json").read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")  # v3/PROVIDER/version | v3/PROVIDER/VERSION/catalog.zip
        csv_file = FIXTURE / f"{parts[1]}.csv" if len(parts) >= 3 else None
        if csv_file is None or not csv_file.exists():
            self.send_error(404)
            return
        if parts[2] == "version":
            body = VERSION.encode()
        else:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                archive.write(csv_file, f"{parts[1]}.csv")
            body = buffer.getvalue()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass


@pytest.fixture
def recorded_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorded)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v3"
    monkeypatch.setenv("GPUHUNT_CATALOG_URL", url)
    import gpuhunt.providers.vastai as vastai

    monkeypatch.setattr(vastai, "bundles_url", f"http://127.0.0.1:{server.server_address[1]}/api/v0/bundles/")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()


def test_fetch_reads_what_gpuhunt_downloads_and_names_the_providers_that_failed(recorded_server: str) -> None:
    sources, failed = fetch_gpuhunt(["aws", "runpod", "lambdalabs", "nebius"], dt.date(2026, 11, 23))
    by_provider = {s.provider: s for s in sources}
    assert set(by_provider) == {"aws", "runpod", "lambdalabs"}
    assert set(failed) == {"nebius"}  # the server has no nebius catalog: down
    assert by_provider["aws"].captured_at == dt.date(2026, 11, 19)  # from the catalog's version
    g5 = [r for r in by_provider["aws"].rows if r.instance_name == "g5.xlarge" and not r.spot]
    assert sorted(r.price for r in g5) == [1.006, 1.123]


def test_an_unreachable_source_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("GPUHUNT_CATALOG_URL", f"http://127.0.0.1:{port}/v3")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with pytest.raises(PerdollarError, match="could not download gpuhunt's catalogs"):
        fetch_gpuhunt(["aws"], dt.date(2026, 11, 23))


def test_the_cli_refreshes_through_gpuhunt_and_keeps_the_clouds_that_failed(recorded_server: str) -> None:
    result = run_perdollar("catalog", "refresh", "--provider", "runpod", "--provider", "nebius")
    assert result.returncode == 0, result.stderr
    assert "not refreshed: nebius" in result.stderr
    fresh = catalog.load()
    runpod = [o for o in fresh.offers if o.cloud == "runpod"]
    assert runpod and {o.captured_at for o in runpod} == {dt.date(2026, 11, 19)}
    assert sum(o.cloud == "aws" for o in fresh.offers) > 1000  # not refreshed: carried over


def test_vast_ai_offers_come_live_and_are_named_by_their_shape(recorded_server: str) -> None:
    from perdollar.catalog.refresh_gpuhunt import build_refresh

    sources, failed = fetch_gpuhunt(["vastai"], dt.date(2026, 11, 23))
    assert failed == {}
    result = build_refresh(catalog.load(), sources)
    offers = {(o.instance_type, o.region, o.market): o for o in result.offers if o.cloud == "vastai"}
    # price = base + disk: 0.32 + 120 GB × $0.15/GB-month / 720 h
    assert offers[("1x RTX4090", "ca-quebec", "on-demand")].price_per_hour == pytest.approx(0.345)
    assert offers[("1x RTX4090", "ca-quebec", "spot")].price_per_hour == pytest.approx(0.215)
    node = result.instance_types[("vastai", "4x H100")]
    assert (node.accelerator_key, node.accelerator_count) == ("H100-SXM5-80GB", 4)
    assert {o.captured_at for o in result.offers if o.cloud == "vastai"} == {dt.date(2026, 11, 23)}
