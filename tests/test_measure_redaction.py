"""`bench -- CMD` keeps its command line and output tail without the secrets they carry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from perdollar.measure.command import run_command
from perdollar.measure.redact import MASK, redact_arguments, redact_text
from perdollar.store import open_store

SECRETS = ("hf_AbCdEfGhIjKlMnOpQrStUvWx", "hunter2", "s3cr3t-pw", "sk-live0123456789abcdefghij")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--hf-token", "hf_AbCdEfGhIjKlMnOpQrStUvWx", "--lr", "3e-4"], ["--hf-token", MASK, "--lr", "3e-4"]),
        (["--password=hunter2"], [f"--password={MASK}"]),
        (["WANDB_API_KEY=abc123", "python"], [f"WANDB_API_KEY={MASK}", "python"]),
        (["--db", "postgresql://bob:s3cr3t-pw@db/x"], ["--db", f"postgresql://bob:{MASK}@db/x"]),
        (["--client-secret", "x", "--batch-size", "32"], ["--client-secret", MASK, "--batch-size", "32"]),
        (["--max-tokens", "512"], ["--max-tokens", MASK]),  # a name that says token is enough
        (["--epochs", "3", "train.py"], ["--epochs", "3", "train.py"]),
    ],
)
def test_arguments_are_redacted(argv: list[str], expected: list[str]) -> None:
    assert redact_arguments(argv) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWx", f"export HF_TOKEN={MASK}"),
        ("Authorization: Bearer abcdefghijklmnop", f"Authorization: Bearer {MASK}"),
        ("key AKIAABCDEFGHIJKLMNOP used", f"key {MASK} used"),
        ("num_tokens: 4096 at 312.5 samples/second", "num_tokens: 4096 at 312.5 samples/second"),
        ("loss 0.31", "loss 0.31"),
    ],
)
def test_output_lines_are_redacted(line: str, expected: str) -> None:
    assert redact_text(line) == expected


def test_a_stored_command_measurement_holds_no_secret(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\n"
        "print('connecting to postgresql://bob:s3cr3t-pw@db/x with token=hunter2', flush=True)\n"
        "for _ in range(8):\n"
        "    print('100 samples/second', flush=True)\n"
        "print('API key sk-live0123456789abcdefghij rejected')\n"
        "sys.exit(3)\n"
    )
    argv = [sys.executable, str(script), "--hf-token", SECRETS[0], "--password=hunter2"]
    measurement = run_command(argv)
    assert measurement.status == "error"  # exited 3: its last line is the message
    store_url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    with open_store(store_url) as store:
        store.save_measurement(measurement)
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("results.sqlite*"))
    shown = json.dumps([measurement.message, measurement.extra])
    for secret in SECRETS:
        assert secret not in shown
        assert secret.encode() not in stored
    assert MASK in measurement.extra["command"] and "--hf-token" in measurement.extra["command"]
