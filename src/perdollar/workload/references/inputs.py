"""Synthetic input factories shared by the reference workloads (random data, right shapes)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from perdollar.workload.spec import Device


def images(batch_size: int, device: Device, *, size: int, classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    pixels = torch.randn(batch_size, 3, size, size, device=device)
    labels = torch.randint(0, classes, (batch_size,), device=device)
    return pixels, labels


def image_dict(batch_size: int, device: Device, *, size: int, classes: int) -> dict[str, torch.Tensor]:
    pixels, labels = images(batch_size, device, size=size, classes=classes)
    return {"pixel_values": pixels, "labels": labels}


def question_answering(
    batch_size: int, device: Device, *, seq_len: int, vocab: int
) -> dict[str, torch.Tensor]:
    return {
        "input_ids": torch.randint(0, vocab, (batch_size, seq_len), device=device),
        "token_type_ids": torch.zeros(batch_size, seq_len, dtype=torch.long, device=device),
        "start_positions": torch.randint(0, seq_len, (batch_size,), device=device),
        "end_positions": torch.randint(0, seq_len, (batch_size,), device=device),
    }


def causal_lm(batch_size: int, device: Device, *, seq_len: int, vocab: int) -> dict[str, torch.Tensor]:
    tokens = torch.randint(0, vocab, (batch_size, seq_len), device=device)
    return {"input_ids": tokens, "labels": tokens}


def features(
    batch_size: int, device: Device, *, width: int, classes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    return (
        torch.randn(batch_size, width, device=device),
        torch.randint(0, classes, (batch_size,), device=device),
    )


def cross_entropy(
    outputs: torch.Tensor | tuple[torch.Tensor, ...], batch: Sequence[torch.Tensor]
) -> torch.Tensor:
    logits = outputs[0] if isinstance(outputs, tuple) else outputs
    return torch.nn.functional.cross_entropy(logits, batch[-1])
