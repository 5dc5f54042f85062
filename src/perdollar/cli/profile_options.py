"""The options of ``perdollar profile``, declared once here and generated onto it by
:func:`perdollar.cli.declared.takes`."""

from __future__ import annotations

from dataclasses import dataclass

from perdollar.question import declared


@dataclass(frozen=True, slots=True)
class ProfileRun:
    """Which step ``profile`` traces, how much of it it lists, and how long a workload file may take."""

    inference: bool = declared(False, "--inference", "Profile the forward pass of serving.")
    top: int = declared(8, "--top", "How many operators to list by FLOPs and by bytes.")
    timeout: float = declared(
        300.0, "--timeout", "Seconds a workload file may take to import and trace (default 300)."
    )
