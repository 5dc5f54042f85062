"""`bench -- CMD` reads throughput the way training loops print it, and never calls iterations samples."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.measure import log_formats as formats

SCRIPTS = Path(__file__).parent / "log_scripts"


@pytest.mark.parametrize(
    ("log_format", "line", "rate"),
    [
        (formats.TQDM_RATE, "Epoch 0:  40%|████      | 20/50 [00:00<00:00, 35.12it/s, loss=1.2]", 35.12),
        (formats.TQDM_RATE, " 10%|█         | 1200/12000 [00:01<00:09, 1.20kit/s]", 1200.0),
        (formats.TQDM_TIME, " 10%|█         | 1/10 [00:04<00:36, 4.00s/it]", 0.25),
        (
            formats.HF_SAMPLES,
            "{'train_runtime': '0.59', 'train_samples_per_second': '810.4', 'epoch': 1}",
            810.4,
        ),
        (formats.HF_SAMPLES, '{"train_samples_per_second": 12.5, "train_steps_per_second": 1.6}', 12.5),
        (formats.HF_STEPS, "{'train_runtime': 10.0, 'train_steps_per_second': 1.6}", 1.6),
        (formats.KERAS_MS, "100/100 ━━━━━━━━━━━━━━━━━━━━ 1s 5ms/step - loss: 0.25", 200.0),
        (formats.KERAS_S, "20/20 ━━━━━━━━━━━━━━━━━━━━ 40s 2s/step - loss: 0.25", 0.5),
        (formats.IMAGES, "epoch 3 step 200: 812.25 img/s", 812.25),
        (formats.IMAGES, "throughput 1,024 images/sec", 1024.0),
        (formats.SAMPLES, "312.5 samples/second", 312.5),
        (formats.TOKENS, "step 40 | 15,300 tokens/s | loss 2.1", 15300.0),
        (formats.TOKENS, "tok/s: 0 | 9000 tok/s", 9000.0),
    ],
)
def test_each_format_reads_its_line(log_format: formats.LogFormat, line: str, rate: float) -> None:
    assert log_format.read(line) == pytest.approx(rate)


@pytest.mark.parametrize(
    ("line", "step"),
    [
        ("step 120 loss 2.31", 120.0),
        ("Step 120/1000 | loss=2.3100 | lr 3e-4", 120.0),
        ("iter: 7, train_loss 2.3", 7.0),
        ("[global_step 40] loss: 0.12", 40.0),
    ],
)
def test_a_loops_step_lines_read_as_its_step_counter(line: str, step: float) -> None:
    assert formats.STEP_LINES.read(line) == step


@pytest.mark.parametrize(
    "line", ["step 3 of the setup done", "100/100 1s 5ms/step - loss: 0.25", "epoch 1 loss 0.5"]
)
def test_lines_without_a_step_counter_and_a_loss_are_no_step_lines(line: str) -> None:
    assert formats.STEP_LINES.read(line) is None


def test_a_step_counter_turns_into_steps_per_second_over_a_window() -> None:
    counter = formats.CounterRate(window_s=0.5)
    assert counter.reading(10, at=100.0) is None  # the first line only anchors the count
    assert counter.reading(12, at=100.2) is None  # lines that arrive together are no rate
    assert counter.reading(20, at=101.0) == pytest.approx(10.0)  # 10 steps in 1 s
    assert counter.reading(1, at=102.0) is None  # a counter that restarts (a new epoch) anchors again
    assert counter.reading(9, at=104.0) == pytest.approx(4.0)


def test_formats_do_not_read_each_other() -> None:
    assert formats.TQDM_TIME.read("35.12it/s") is None
    assert formats.KERAS_S.read("1s 5ms/step") is None
    assert formats.SAMPLES.read("{'train_samples_per_second': '810.4'}") is None


def test_the_most_direct_format_wins() -> None:
    counts = {formats.TQDM_RATE.name: 60, formats.HF_SAMPLES.name: 1, formats.HF_STEPS.name: 1}
    assert formats.best_format(counts, formats.KNOWN_FORMATS) is formats.HF_SAMPLES
    assert formats.best_format({}, formats.KNOWN_FORMATS) is None


def _bench(*args: str, cwd: Path) -> tuple[int, dict, str]:
    completed = run_perdollar("bench", "--no-store", "--json", *args, cwd=cwd, timeout=600, columns=200)
    document = json.loads(completed.stdout) if completed.stdout.strip() else {}
    measurement = document["measurements"][0] if "measurements" in document else document
    return completed.returncode, measurement, completed.stderr


def _truth(measurement: dict) -> float:
    line = next(line for line in measurement["extra"]["output_tail"] if line.startswith("TRUTH "))
    return float(line.split()[1])


@pytest.mark.slow
@pytest.mark.exclusive  # each script's steady rate is checked against its own printed figure
@pytest.mark.parametrize(
    ("script", "batch", "read_as"),
    [
        ("tqdm_loop.py", "32", "tqdm it/s"),
        ("hf_trainer.py", "8", "Hugging Face Trainer train_samples_per_second"),
        ("lightning_fit.py", "16", "tqdm it/s"),
    ],
)
def test_real_training_scripts_agree_with_their_own_figures(
    script: str, batch: str, read_as: str, tmp_path: Path
) -> None:
    command = (sys.executable, str(SCRIPTS / script), str(tmp_path))
    code, measurement, stderr = _bench("-b", batch, "--", *command, cwd=tmp_path)
    assert code == 0, stderr[-2000:]
    assert measurement["extra"]["log_format"] == read_as
    rate = measurement["samples_per_second"]["median"]
    assert rate == pytest.approx(_truth(measurement), rel=0.10)


def test_iterations_without_a_batch_size_are_never_called_samples(tmp_path: Path) -> None:
    code, measurement, _ = _bench("--", sys.executable, str(SCRIPTS / "tqdm_loop.py"), cwd=tmp_path)
    assert code == 1
    assert measurement["status"] == "error" and measurement["samples_per_second"] is None
    assert "tqdm it/s" in measurement["message"] and "--batch-size" in measurement["message"]


def test_a_pattern_with_a_unit_of_iterations_is_scaled_by_the_batch(tmp_path: Path) -> None:
    printer = (
        "import time\nfor _ in range(40):\n"
        "    print('speed 2.5 iters per second', flush=True)\n    time.sleep(0.01)"
    )
    options = ("--pattern", r"speed ([0-9.]+) iters", "--unit", "iterations", "-b", "4")
    code, measurement, stderr = _bench(*options, "--", sys.executable, "-c", printer, cwd=tmp_path)
    assert code == 0, stderr[-2000:]
    assert measurement["samples_per_second"]["median"] == pytest.approx(10.0)
    assert measurement["batch_size"] == 4


def test_a_log_without_throughput_is_one_line_naming_what_was_seen(tmp_path: Path) -> None:
    code, measurement, _ = _bench("--", sys.executable, "-c", "print('epoch 1 loss 0.5')", cwd=tmp_path)
    assert code == 1
    message = measurement["message"]
    assert "\n" not in message and "no throughput" in message and "epoch 1 loss 0.5" in message


STEP_LOOP = """
import time

BATCH, STEPS, STEADY_FROM = 8, 150, 25
for step in range(STEPS):
    if step == STEADY_FROM:
        start = time.perf_counter()
    time.sleep(0.02)
    print(f"step {step} loss {1 / (step + 1):.4f}")  # no flush: a pipe buffers it unless told not to
print(f"TRUTH {(STEPS - STEADY_FROM) * BATCH / (time.perf_counter() - start):.3f}")
"""


def test_a_loop_printing_step_and_loss_lines_is_measured_in_samples(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(STEP_LOOP, encoding="utf-8")
    code, measurement, stderr = _bench("-b", "8", "--", sys.executable, str(script), cwd=tmp_path)
    assert code == 0, stderr[-2000:] + measurement.get("message", "")
    assert measurement["extra"]["log_format"] == formats.STEP_LINES.name
    assert measurement["samples_per_second"]["median"] == pytest.approx(_truth(measurement), rel=0.15)


def test_step_lines_without_a_batch_size_are_steps_not_samples(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(STEP_LOOP, encoding="utf-8")
    code, measurement, _ = _bench("--", sys.executable, str(script), cwd=tmp_path)
    assert code == 1 and measurement["samples_per_second"] is None
    message = measurement["message"]
    assert formats.STEP_LINES.name in message and "steps/s" in message and "--batch-size" in message
