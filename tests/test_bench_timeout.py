"""`bench --timeout` bounds the whole measurement: loading, the one-process baseline and the run."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cli_runner import run_perdollar

TINY_CONFIG = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 256,
    "max_position_embeddings": 128,
}


def test_a_two_process_bench_past_its_timeout_stops_at_the_timeout(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
    timeout = 10
    started = time.monotonic()
    # A 30 s measuring window cannot end within 10 s: the one-process baseline is still running.
    done = run_perdollar(
        "bench", str(config), "--nproc", "2", "--duration", "30", "--timeout", str(timeout),
        "--no-store", "--json", cwd=tmp_path, env={"PERDOLLAR_METADATA_URL": "off"},
    )  # fmt: skip
    elapsed = time.monotonic() - started
    # Each run once had the whole timeout of its own: the baseline's 10 s, then the run's 10 s.
    assert elapsed < 2 * timeout - 1, f"took {elapsed:.1f} s with --timeout {timeout}"
    result = json.loads(done.stdout)
    assert done.returncode == 1 and result["status"] == "timeout", done.stderr[-2000:]
    assert result["nproc"] == 2
    assert result["message"].startswith(f"timed out after {timeout} s"), result["message"]
