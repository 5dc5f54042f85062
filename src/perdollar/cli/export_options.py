"""The options of ``perdollar export``, declared once here and generated onto it by
:func:`perdollar.cli.declared.takes`. ``--format`` stays on the command: it is required, and a
declared field always has a default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perdollar.question import declared


@dataclass(frozen=True, slots=True)
class ExportLaunch:
    """What goes into the launch description beside the candidate, and where it is written."""

    max_run: str = declared("24h", "--max-run", "SageMaker max_run (e.g. 24h, 90m).")
    max_wait: str | None = declared(None, "--max-wait", "SageMaker spot max_wait (≥ --max-run).")
    workload: str | None = declared(
        None, "--workload", "torchrun/skypilot: the language model (built-in or config.json).", short="-w"
    )
    plan: str | None = declared(None, "--plan", "torchrun/skypilot: fix the plan, e.g. fsdp+ac,mb4.")
    seq_len: int | None = declared(None, "--seq-len", "torchrun/skypilot: tokens per sequence.")
    global_batch: int | None = declared(
        None, "--global-batch", "torchrun/skypilot: sequences per optimizer step."
    )
    script: str = declared("train.py", "--script", "torchrun/skypilot: the training script.")
    as_yaml: bool = declared(False, "--yaml", "Print YAML instead of JSON.")
    out: Path | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None, "--out", "Also write the description to this file.", short="-o"
    )
    force: bool = declared(False, "--force", "Replace the --out file if it exists.")
