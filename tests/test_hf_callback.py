"""perdollar's Hugging Face Trainer callback, on a real Trainer on CPU, stores what it measured."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "log_scripts" / "hf_callback.py"


@pytest.mark.slow
@pytest.mark.exclusive  # its steady rate is checked against the Trainer's whole-run figure
def test_the_callback_meters_a_real_trainer_and_stores_the_measurement(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "out"), f"sqlite:///{store}"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ},
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    # 120 steps logged every 20: six readings, printed as they came.
    assert result["readings"] == 6
    assert completed.stderr.count("samples/s") >= 6 and "samples/$ at $2.00/h" in completed.stderr
    median, extra = result["median"], result["extra"]
    # Warm-up left out, the steady rate is of the Trainer's own whole-run figure's order.
    assert 0.5 * result["trainer_samples_per_second"] < median < 3 * result["trainer_samples_per_second"]
    assert extra["tokens_per_sample"] == 24
    assert extra["tokens_per_second"] == pytest.approx(median * 24)
    assert extra["samples_per_dollar"] == pytest.approx(median * 3600 / 2.0)
    assert result["stored_id"] and f"stored measurement {result['stored_id']}" in completed.stderr
    with sqlite3.connect(store) as connection:
        tables = {row[0] for row in connection.execute("select name from sqlite_master where type='table'")}
        table = next(name for name in tables if "measurement" in name)
        rows = connection.execute(f"select id from {table}").fetchall()
    assert [row[0] for row in rows] == [result["stored_id"]]


def test_the_lightning_callback_meters_a_real_fit(tmp_path: Path) -> None:
    import lightning as L
    import torch

    from perdollar.integrations.lightning import MeterCallback

    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Linear(8, 1)

        def training_step(self, batch: list, index: int) -> torch.Tensor:
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.01)

    readings: list = []
    options = {"log_every": 10, "warmup_steps": 2, "price_per_hour": 1.0, "sink": readings.append}
    callback = MeterCallback(batch_size=16, **options)
    data = torch.utils.data.TensorDataset(torch.randn(16 * 40, 8), torch.randn(16 * 40, 1))
    trainer = L.Trainer(
        max_steps=40, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, callbacks=[callback], default_root_dir=str(tmp_path),
    )  # fmt: skip
    trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=16))
    assert [r.step for r in readings] == [10, 20, 30, 40]
    last = readings[-1]
    assert last.samples_per_dollar == pytest.approx(last.samples_per_second * 3600 / 1.0)
    logged = float(trainer.callback_metrics["perf/samples_per_second"])
    assert logged == pytest.approx(last.samples_per_second)
