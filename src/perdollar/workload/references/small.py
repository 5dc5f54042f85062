"""Small and recurrent reference models in plain ``torch.nn``: MLP, NCF (NeuMF) and GNMT.

NCF follows He et al. 2017 (NeuMF with MovieLens-20M's user and item counts, as in NVIDIA's
DeepLearningExamples); GNMT follows Wu et al. 2016 as trimmed by MLPerf/NVIDIA (4+4 LSTM
layers of 1024 units, the first encoder layer bidirectional, additive attention).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import nn

from perdollar.workload.spec import Device


def mlp(width: int = 256, hidden: int = 1024, depth: int = 2, classes: int = 10) -> nn.Module:
    layers: list[nn.Module] = []
    cin = width
    for _ in range(depth):
        layers += [nn.Linear(cin, hidden), nn.ReLU()]
        cin = hidden
    layers.append(nn.Linear(cin, classes))
    return nn.Sequential(*layers)


class NeuMF(nn.Module):
    def __init__(
        self,
        users: int = 138_493,
        items: int = 26_744,
        factors: int = 64,
        layers: tuple[int, ...] = (256, 256, 128, 64),
    ) -> None:
        super().__init__()
        self.mf_user = nn.Embedding(users, factors)
        self.mf_item = nn.Embedding(items, factors)
        self.mlp_user = nn.Embedding(users, layers[0] // 2)
        self.mlp_item = nn.Embedding(items, layers[0] // 2)
        tower: list[nn.Module] = []
        for cin, cout in itertools.pairwise(layers):
            tower += [nn.Linear(cin, cout), nn.ReLU()]
        self.tower = nn.Sequential(*tower)
        self.head = nn.Linear(factors + layers[-1], 1)

    def forward(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        mf = self.mf_user(users) * self.mf_item(items)
        deep = self.tower(torch.cat([self.mlp_user(users), self.mlp_item(items)], dim=1))
        return self.head(torch.cat([mf, deep], dim=1)).squeeze(1)


def ncf_inputs(
    batch_size: int, device: Device, *, users: int = 138_493, items: int = 26_744
) -> tuple[torch.Tensor, ...]:
    return (
        torch.randint(0, users, (batch_size,), device=device),
        torch.randint(0, items, (batch_size,), device=device),
        torch.randint(0, 2, (batch_size,), device=device).float(),
    )


def ncf_loss(outputs: torch.Tensor, batch: Sequence[torch.Tensor]) -> torch.Tensor:
    return nn.functional.binary_cross_entropy_with_logits(outputs.float(), batch[-1].float())


class GNMT(nn.Module):
    def __init__(self, vocab: int = 32_000, hidden: int = 1024, layers: int = 4) -> None:
        super().__init__()
        self.embed_source = nn.Embedding(vocab, hidden)
        self.embed_target = nn.Embedding(vocab, hidden)
        self.encoder_first = nn.LSTM(hidden, hidden // 2, batch_first=True, bidirectional=True)
        self.encoder_rest = nn.LSTM(hidden, hidden, num_layers=layers - 1, batch_first=True)
        self.decoder_first = nn.LSTM(hidden, hidden, batch_first=True)
        self.attention_query = nn.Linear(hidden, hidden, bias=False)
        self.attention_key = nn.Linear(hidden, hidden, bias=False)
        self.attention_score = nn.Linear(hidden, 1, bias=False)
        self.decoder_rest = nn.LSTM(2 * hidden, hidden, num_layers=layers - 1, batch_first=True)
        self.classifier = nn.Linear(hidden, vocab)

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        encoded, _ = self.encoder_first(self.embed_source(source))
        encoded, _ = self.encoder_rest(encoded)
        decoded, _ = self.decoder_first(self.embed_target(target))
        # Additive (Bahdanau) attention of every decoder step over every encoder step.
        keys = self.attention_key(encoded).unsqueeze(1)
        queries = self.attention_query(decoded).unsqueeze(2)
        scores = self.attention_score(torch.tanh(queries + keys)).squeeze(-1)
        context = torch.softmax(scores, dim=-1) @ encoded
        decoded, _ = self.decoder_rest(torch.cat([decoded, context], dim=-1))
        return self.classifier(decoded)


def gnmt_inputs(
    batch_size: int, device: Device, *, seq_len: int = 50, vocab: int = 32_000
) -> tuple[torch.Tensor, ...]:
    source = torch.randint(0, vocab, (batch_size, seq_len), device=device)
    target = torch.randint(0, vocab, (batch_size, seq_len), device=device)
    return source, target, target


def gnmt_loss(outputs: torch.Tensor, batch: Sequence[torch.Tensor]) -> torch.Tensor:
    return nn.functional.cross_entropy(outputs.flatten(0, 1).float(), batch[-1].flatten())
