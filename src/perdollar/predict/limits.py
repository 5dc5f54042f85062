"""Which clusters may be candidates at all: a cap on their accelerator chips, and the software
stacks those chips may run.

Chips are counted alike whatever carries them: a GPU host's GPUs times its nodes, a TPU slice's
chips times its slices. A node cap alone lets four 256-chip TPU slices (1,024 chips) stand beside
four 8-GPU hosts (32 GPUs); a chip cap compares them on the same footing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perdollar.catalog.model import Accelerator

# A host without an accelerator runs the CPU stack.
CPU_STACK = "cpu"


@dataclass(frozen=True, slots=True)
class CandidateLimits:
    """A cap on a cluster's chips (None: none) and the stacks its chips may run (empty: any)."""

    max_accelerators: int | None = None
    stacks: frozenset[str] = frozenset()

    @property
    def limiting(self) -> bool:
        return self.max_accelerators is not None or bool(self.stacks)

    def admits(self, chips_per_node: float, nodes: int, stack: str | None) -> bool:
        """Whether a cluster of ``nodes`` × ``chips_per_node`` chips of ``stack`` may be a candidate."""
        if self.max_accelerators is not None and chips_per_node * nodes > self.max_accelerators:
            return False
        return not self.stacks or (stack or CPU_STACK) in self.stacks


def within_limits(
    frame: pd.DataFrame, accelerators: Mapping[str, Accelerator], limits: CandidateLimits
) -> pd.DataFrame:
    """The rows of a prediction frame (``accelerators_per_node``, ``nodes``, ``accelerator_key``)
    whose clusters ``limits`` admits."""
    if not limits.limiting or frame.empty:
        return frame
    keep = np.ones(len(frame), dtype=bool)
    if limits.max_accelerators is not None:
        chips = frame["accelerators_per_node"].fillna(0).to_numpy(dtype=np.float64)
        keep &= chips * frame["nodes"].to_numpy(dtype=np.float64) <= limits.max_accelerators
    if limits.stacks:
        stack_of = {key: chip.software_stack for key, chip in accelerators.items()}
        stacks = frame["accelerator_key"].map(lambda key: stack_of.get(str(key), CPU_STACK))
        keep &= stacks.isin(sorted(limits.stacks)).to_numpy(dtype=bool)
    return frame[keep].reset_index(drop=True)
