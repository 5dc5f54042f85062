"""The pinned questions and the figures read from their ``--json`` answers.

Shared by ``tests/test_pinned_answers.py`` (which compares today's answers to the golden file)
and ``benchmarks/pin_answers.py --write`` (which writes the golden file).

Where the ranked rows are in each kind's ``--json`` document:

- training (vision and language models), ``recommend``: ``estimates``, best first; the first
  ``ROWS_PER_ANSWER`` rows are pinned (the document carries every candidate, not just ``--top``);
- serving, ``recommend --inference`` (vision and language models): ``deployments``, cheapest first;
- ``compare``: ``comparison.estimates`` (in the order the configurations were given) and
  ``comparison.ratios`` (each configuration against the best one).

Each pinned row keeps its ``label`` and every key of ``FIGURES`` that the row carries: numbers
are compared within a relative ``TOLERANCE``, text (a plan, a precision) exactly. Nothing that
depends on the day the question is asked (``created_at``, ``price_age_days``) is pinned.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "data" / "pinned_answers.json"
ROWS_PER_ANSWER = 10
TOLERANCE = 1e-6

QUESTIONS: dict[str, tuple[str, ...]] = {
    "vision training": ("recommend", "vit-b16", "--samples", "1e9", "--deadline", "72h"),
    "vision training, cheapest on-demand on gcp/azure under a budget": (
        "recommend", "vit-b16", "--samples", "2e8", "--objective", "cost", "--budget", "300",
        "--cloud", "gcp", "--cloud", "azure", "--market", "on-demand", "--max-nodes", "2",
    ),
    "language-model training with a plan": ("recommend", "llama-3.1-8b", "--tokens", "2e10"),
    "LoRA fine-tuning on aws by a deadline": (
        "recommend", "llama-3.1-8b", "--tokens", "1e9", "--finetune", "lora", "--deadline", "7d",
        "--cloud", "aws",
    ),
    "vision serving": ("recommend", "resnet50", "--inference", "--qps", "200", "--p99-ms", "50"),
    "language-model serving": (
        "recommend", "llama-3.1-8b", "--inference", "--rps", "5", "--input-tokens", "1000",
        "--output-tokens", "300", "--ttft-p99-ms", "1000", "--tpot-p99-ms", "50",
    ),
    "vision compare": (
        "compare", "vit-b16", "4x g5.2xlarge spot", "1x g5.12xlarge on-demand", "--samples", "1e8",
    ),
    "language-model compare": (
        "compare", "llama-3.1-8b", "1x p5.48xlarge", "2x p4d.24xlarge", "--tokens", "2e10",
    ),
}  # fmt: skip

FIGURES = (
    # training estimates
    "nodes", "accelerator", "accelerators_per_node", "samples_per_second", "samples_per_second_low",
    "samples_per_second_high", "price_per_hour", "samples_per_dollar", "time_to_target_hours",
    "cost_to_target_usd", "expected_time_hours", "expected_cost_usd", "p_meet_deadline",
    "effective_samples_per_dollar", "plan", "mfu", "memory_per_gpu_gib", "feasible",
    # serving deployments (vision and language models)
    "instances", "replicas", "batch", "latency_ms", "latency_high_ms", "capacity_per_replica",
    "utilisation", "deployment_price_per_hour", "usd_per_million_requests", "tensor_parallel",
    "precision", "ttft_p99_ms", "tpot_p99_ms", "max_concurrent_sequences", "kv_cache_gib",
    "usd_per_million_output_tokens", "usd_per_million_tokens",
    # compare ratios
    "cost_ratio", "cost_ratio_sd", "speed_ratio", "speed_ratio_sd",
)  # fmt: skip


def ask(arguments: Sequence[str], home: Path, timeout: float = 300) -> dict[str, Any]:
    """``perdollar ARGUMENTS --no-store --json`` in a fresh interpreter; its JSON document."""
    env = {**os.environ, "PERDOLLAR_HOME": str(home), "COLUMNS": "200"}
    env.pop("PERDOLLAR_STORE", None)
    done = subprocess.run(
        [sys.executable, "-m", "perdollar", *arguments, "--no-store", "--json"],
        capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip
    if done.returncode != 0:
        command = " ".join(arguments)
        raise AssertionError(f"perdollar {command} exited {done.returncode}: {done.stderr[-2000:]}")
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def ranked_rows(document: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The answer's ranked rows by section, each row its label and its pinned figures."""
    if "comparison" in document:
        comparison = document["comparison"]
        sections = {
            "comparison.estimates": comparison["estimates"],
            "comparison.ratios": comparison["ratios"],
        }
    elif "deployments" in document:
        sections = {"deployments": document["deployments"]}
    elif "estimates" in document:
        sections = {"estimates": document["estimates"][:ROWS_PER_ANSWER]}
    else:
        raise AssertionError(f"no ranked rows in an answer with keys {sorted(document)}")
    return {name: [_pinned(row) for row in rows] for name, rows in sections.items()}


def _pinned(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"label": row["label"]} | {key: row[key] for key in FIGURES if key in row}


def differences(question: str, pinned: Mapping[str, list[dict[str, Any]]],
                today: Mapping[str, list[dict[str, Any]]]) -> list[str]:  # fmt: skip
    """One line per changed label or figure: which question, which row and which figure."""
    found = []
    if sorted(pinned) != sorted(today):
        return [f"{question}: sections {sorted(today)} instead of {sorted(pinned)}"]
    for section, rows in pinned.items():
        now = today[section]
        if len(now) != len(rows):
            found.append(f"{question}: {section} has {len(now)} rows instead of {len(rows)}")
        for rank, (then, row) in enumerate(zip(rows, now, strict=False), start=1):
            where = f"{question}: {section} row {rank} ({then['label']})"
            if row["label"] != then["label"]:
                found.append(f"{where}: label is now {row['label']!r}")
                continue
            found += [f"{where}: {change}" for change in _figure_changes(then, row)]
    return found


def _figure_changes(then: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    changes = []
    for key in sorted(set(then) | set(now)):
        if key not in now:
            changes.append(f"{key} is missing (was {then[key]!r})")
        elif key not in then:
            changes.append(f"{key} is new ({now[key]!r})")
        elif not _same(then[key], now[key]):
            changes.append(f"{key} is {now[key]!r}, was {then[key]!r}")
    return changes


def _same(then: Any, now: Any) -> bool:
    numbers = (int, float)
    if isinstance(then, numbers) and isinstance(now, numbers) and not isinstance(then, bool):
        return math.isclose(then, now, rel_tol=TOLERANCE, abs_tol=0.0)
    return bool(then == now)
