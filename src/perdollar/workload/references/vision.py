"""Convolutional reference models in plain ``torch.nn`` (no torchvision): ResNet, VGG, Inception v3.

Layer shapes follow the published architectures (He et al. 2015 with the v1.5 stride placement
used by NVIDIA's DeepLearningExamples; Simonyan & Zisserman 2014 configuration D; Szegedy et
al. 2015 Inception v3 without the auxiliary head), so FLOP counts match the usual figures.
"""

from __future__ import annotations

import torch
from torch import nn


def _conv_bn(
    cin: int, cout: int, kernel: int | tuple[int, int], stride: int = 1, padding: int | tuple[int, int] = 0
) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * self.expansion
        self.body = nn.Sequential(
            _conv_bn(cin, width, 1),
            _conv_bn(width, width, 3, stride=stride, padding=1),  # v1.5: stride on the 3x3
            nn.Conv2d(width, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, blocks_per_stage: tuple[int, int, int, int], classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = [
            _conv_bn(3, 64, 7, stride=2, padding=3),
            nn.MaxPool2d(3, stride=2, padding=1),
        ]
        cin = 64
        for stage, blocks in enumerate(blocks_per_stage):
            width = 64 * 2**stage
            for index in range(blocks):
                layers.append(Bottleneck(cin, width, stride=2 if (index == 0 and stage > 0) else 1))
                cin = width * Bottleneck.expansion
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


def resnet50(classes: int = 1000) -> ResNet:
    return ResNet((3, 4, 6, 3), classes)


def resnet152(classes: int = 1000) -> ResNet:
    return ResNet((3, 8, 36, 3), classes)


_VGG16 = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


class VGG16(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for item in _VGG16:
            if item == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, int(item), 3, padding=1), nn.ReLU(inplace=True)]
                cin = int(item)
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(),
            nn.Linear(4096, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


class _Branches(nn.Module):
    """Parallel branches whose outputs are concatenated on the channel axis."""

    def __init__(self, *branches: nn.Module) -> None:
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([branch(x) for branch in self.branches], 1)


def _pool_proj(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.AvgPool2d(3, stride=1, padding=1), _conv_bn(cin, cout, 1))


def _inception_a(cin: int, pool: int) -> _Branches:
    return _Branches(
        _conv_bn(cin, 64, 1),
        nn.Sequential(_conv_bn(cin, 48, 1), _conv_bn(48, 64, 5, padding=2)),
        nn.Sequential(_conv_bn(cin, 64, 1), _conv_bn(64, 96, 3, padding=1), _conv_bn(96, 96, 3, padding=1)),
        _pool_proj(cin, pool),
    )


def _inception_b(cin: int) -> _Branches:
    return _Branches(
        _conv_bn(cin, 384, 3, stride=2),
        nn.Sequential(_conv_bn(cin, 64, 1), _conv_bn(64, 96, 3, padding=1), _conv_bn(96, 96, 3, stride=2)),
        nn.MaxPool2d(3, stride=2),
    )


def _seven(cin: int, mid: int, cout: int, pairs: int) -> nn.Sequential:
    """1x1 then ``pairs`` of factorised 7x7 convolutions (1x7 and 7x1)."""
    layers: list[nn.Module] = [_conv_bn(cin, mid, 1)]
    channels = mid
    for index in range(pairs * 2):
        last = index == pairs * 2 - 1
        kernel, padding = ((1, 7), (0, 3)) if index % 2 == (0 if pairs == 1 else 1) else ((7, 1), (3, 0))
        out = cout if last else mid
        layers.append(_conv_bn(channels, out, kernel, padding=padding))
        channels = out
    return nn.Sequential(*layers)


def _inception_c(mid: int) -> _Branches:
    return _Branches(
        _conv_bn(768, 192, 1), _seven(768, mid, 192, 1), _seven(768, mid, 192, 2), _pool_proj(768, 192)
    )


def _inception_d() -> _Branches:
    return _Branches(
        nn.Sequential(_conv_bn(768, 192, 1), _conv_bn(192, 320, 3, stride=2)),
        nn.Sequential(
            _conv_bn(768, 192, 1),
            _conv_bn(192, 192, (1, 7), padding=(0, 3)),
            _conv_bn(192, 192, (7, 1), padding=(3, 0)),
            _conv_bn(192, 192, 3, stride=2),
        ),
        nn.MaxPool2d(3, stride=2),
    )


class _SplitPair(nn.Module):
    """A stem followed by a 1x3 and a 3x1 convolution whose outputs are concatenated."""

    def __init__(self, stem: nn.Module, channels: int) -> None:
        super().__init__()
        self.stem = stem
        self.wide = _conv_bn(channels, 384, (1, 3), padding=(0, 1))
        self.tall = _conv_bn(channels, 384, (3, 1), padding=(1, 0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        return torch.cat([self.wide(y), self.tall(y)], 1)


def _inception_e(cin: int) -> _Branches:
    return _Branches(
        _conv_bn(cin, 320, 1),
        _SplitPair(_conv_bn(cin, 384, 1), 384),
        _SplitPair(nn.Sequential(_conv_bn(cin, 448, 1), _conv_bn(448, 384, 3, padding=1)), 384),
        _pool_proj(cin, 192),
    )


class InceptionV3(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _conv_bn(3, 32, 3, stride=2),
            _conv_bn(32, 32, 3),
            _conv_bn(32, 64, 3, padding=1),
            nn.MaxPool2d(3, stride=2),
            _conv_bn(64, 80, 1),
            _conv_bn(80, 192, 3),
            nn.MaxPool2d(3, stride=2),
            _inception_a(192, 32),
            _inception_a(256, 64),
            _inception_a(288, 64),
            _inception_b(288),
            _inception_c(128),
            _inception_c(160),
            _inception_c(160),
            _inception_c(192),
            _inception_d(),
            _inception_e(1280),
            _inception_e(2048),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.dropout(torch.flatten(self.pool(self.features(x)), 1)))
