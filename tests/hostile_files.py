"""Workload files that misbehave on purpose, for the tests that hold perdollar to surviving them."""

from __future__ import annotations

from pathlib import Path

# What the hostile function does; each is one line, so the tests can find its line number.
ACTS = {
    "exit": "os._exit(3)",
    "sysexit": "sys.exit(5)",
    "raise": 'raise RuntimeError("hostile failure")',
    "segv": "ctypes.string_at(0)",
    "sleep": "time.sleep(3600)",
    # More than a 47-bit address space can hold: MemoryError under every overcommit policy.
    "hog": "bytearray(1 << 50)",
}

TEMPLATE = """\
import ctypes
import os
import sys
import time

import torch

from perdollar.workload import Workload

WHERE = {where!r}


def hostile():
    {act}


if WHERE == "import":
    hostile()


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        if WHERE == "forward" and not isinstance(x, torch._subclasses.FakeTensor):
            hostile()
        return self.linear(x)


def inputs(batch, device):
    return torch.randn(batch, 8, device=device)


def loss(out, batch):
    if WHERE == "step":
        hostile()
    return out.sum()


def build():
    return Workload(name={name!r}, model_factory=Model, input_factory=inputs, batch_size=4, loss_fn=loss)
"""


def write_hostile(folder: Path, where: str, act: str, name: str = "hostile") -> tuple[str, str]:
    """Write a workload that does ``act`` at ``where`` (import, step, forward or never).

    Returns the spec to pass to perdollar and ``file:line`` of the hostile line.
    """
    path = folder / f"{where}_{act}.py"
    text = TEMPLATE.format(where=where, act=ACTS[act], name=name)
    path.write_text(text)
    line = text.splitlines().index(f"    {ACTS[act]}") + 1
    return f"{path}:build", f"{path}:{line}"
