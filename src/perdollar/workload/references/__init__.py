"""The built-in reference workloads: name → a :class:`~perdollar.workload.spec.Workload` at its defaults.

Every reference is randomly initialised and never downloaded. The defaults (batch size,
precision, optimizer) follow the setups that the published measurements used, so a reference
can be compared with them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from perdollar.workload.spec import Workload

# The model and input modules import torch (about a second): a reference names the functions it
# uses and each is imported when first called, so that naming, listing or fingerprinting a
# reference — all a profile found on disk needs — imports no torch.


@dataclass(frozen=True)
class Deferred:
    """``module.function(*args, *more, **keywords)`` of this package, imported only when called."""

    module: str  # hf, inputs, small or vision
    function: str
    args: tuple[object, ...] = ()
    keywords: tuple[tuple[str, object], ...] = ()

    # Typed as loosely as the function found by name when called, whichever the reference names.
    def __call__(self, *more: object, **keywords: object) -> Any:
        found = getattr(importlib.import_module(f"{__name__}.{self.module}"), self.function)
        return found(*self.args, *more, **dict(self.keywords), **keywords)


def deferred(module: str, function: str, *args: object, **keywords: object) -> Deferred:
    return Deferred(module, function, args, tuple(sorted(keywords.items())))


def is_reference_workload(workload: Workload) -> bool:
    """A workload built by this module (its model is one of ours), not a user's of the same name."""
    return isinstance(workload.model_factory, Deferred) and workload.origin is None


@dataclass(frozen=True)
class Reference:
    name: str
    description: str
    build: Callable[[], Workload]


def _images(
    name: str,
    model: str,
    *,
    size: int,
    batch: int,
    precision: str,
    optimizer: str,
    description: str,
    hf_style: bool = False,
) -> Workload:
    """``model``: a class or function of ``vision``, or of ``hf`` (``hf_style``: it takes the classes
    and the image size, and its output holds the loss)."""
    factory = deferred("hf", model, 1000, size) if hf_style else deferred("vision", model)
    input_factory = deferred("inputs", "image_dict" if hf_style else "images", size=size, classes=1000)
    return Workload(
        name=name,
        model_factory=factory,
        input_factory=input_factory,
        batch_size=batch,
        loss_fn=None if hf_style else deferred("inputs", "cross_entropy"),
        precision=precision,
        optimizer=optimizer,
        learning_rate=0.1 if optimizer == "sgd" else 1e-4,
        sample_unit="images",
        config={"image_size": size, "classes": 1000},
        description=description,
    )


def _bert(size: str) -> Workload:

    seq_len = 384
    return Workload(
        name=f"bert-{size}",
        model_factory=deferred("hf", "bert_qa", size),
        input_factory=deferred("inputs", "question_answering", seq_len=seq_len, vocab=30522),
        batch_size=32 if size == "base" else 16,
        precision="amp-fp16",
        optimizer="adamw",
        learning_rate=3e-5,
        sample_unit="sequences",
        config={"seq_len": seq_len, "vocab": 30522, "head": "squad-span", "tokens_per_sample": seq_len},
        description=f"BERT-{size} SQuAD-style question-answering fine-tuning, sequence {seq_len}",
    )


def _gpt2() -> Workload:

    seq_len = 1024
    return Workload(
        name="gpt2",
        model_factory=deferred("hf", "gpt2_small", seq_len),
        input_factory=deferred("inputs", "causal_lm", seq_len=seq_len, vocab=50257),
        batch_size=8,
        precision="amp-bf16",
        optimizer="adamw",
        learning_rate=3e-4,
        sample_unit="sequences",
        config={"seq_len": seq_len, "vocab": 50257, "tokens_per_sample": seq_len},
        description="GPT-2 small (124M) causal language-model training, sequence 1024",
    )


def _llama() -> Workload:

    seq_len = 2048
    return Workload(
        name="llama-8b",
        model_factory=deferred("hf", "llama3_8b"),
        input_factory=deferred("inputs", "causal_lm", seq_len=seq_len, vocab=128256),
        batch_size=1,
        precision="bf16",
        optimizer="adamw",
        learning_rate=1e-5,
        sample_unit="sequences",
        config={"seq_len": seq_len, "vocab": 128256, "tokens_per_sample": seq_len, "profile_only": True},
        description="Llama-3 8B full fine-tuning, sequence 2048 (profile only: never materialised)",
    )


def _mlp() -> Workload:

    return Workload(
        name="mlp",
        model_factory=deferred("small", "mlp"),
        input_factory=deferred("inputs", "features", width=256, classes=10),
        batch_size=64,
        loss_fn=deferred("inputs", "cross_entropy"),
        precision="fp32",
        optimizer="adamw",
        learning_rate=1e-3,
        sample_unit="samples",
        config={"width": 256, "hidden": 1024, "depth": 2},
        description="a tiny 3-layer perceptron (256→1024→1024→10) for quick checks",
    )


def _ncf() -> Workload:

    return Workload(
        name="ncf",
        model_factory=deferred("small", "NeuMF"),
        input_factory=deferred("small", "ncf_inputs"),
        batch_size=65536,
        loss_fn=deferred("small", "ncf_loss"),
        precision="amp-fp16",
        optimizer="adam",
        learning_rate=4.5e-3,
        sample_unit="samples",
        config={"users": 138_493, "items": 26_744, "factors": 64},
        description="NCF (NeuMF) on MovieLens-20M shapes; published runs use batches of about 1M",
    )


def _gnmt() -> Workload:

    seq_len = 50
    return Workload(
        name="gnmt",
        model_factory=deferred("small", "GNMT"),
        input_factory=deferred("small", "gnmt_inputs", seq_len=seq_len),
        batch_size=128,
        loss_fn=deferred("small", "gnmt_loss"),
        precision="amp-fp16",
        optimizer="adam",
        learning_rate=2e-3,
        sample_unit="sentences",
        config={"seq_len": seq_len, "vocab": 32_000, "hidden": 1024, "tokens_per_sample": 2 * seq_len},
        description="GNMT-style LSTM seq2seq (4+4 layers of 1024, attention), 50 tokens each side",
    )


REFERENCES: dict[str, Reference] = {
    ref.name: ref
    for ref in (
        Reference("mlp", "tiny MLP, fast on a CPU", _mlp),
        Reference(
            "vit-b16",
            "ViT-Base/16, 224², batch 128, Adam, bf16 autocast",
            partial(
                _images,
                "vit-b16",
                "vit_b16",
                size=224,
                batch=128,
                precision="amp-bf16",
                optimizer="adam",
                hf_style=True,
                description="ViT-Base/16 image classification, 224², 1000 classes",
            ),
        ),
        Reference(
            "resnet50",
            "ResNet-50 v1.5, 224², batch 256, SGD, fp16 autocast",
            partial(
                _images,
                "resnet50",
                "resnet50",
                size=224,
                batch=256,
                precision="amp-fp16",
                optimizer="sgd",
                description="ResNet-50 v1.5 image classification, 224², 1000 classes",
            ),
        ),
        Reference(
            "resnet152",
            "ResNet-152, 224², batch 128, SGD, fp16 autocast",
            partial(
                _images,
                "resnet152",
                "resnet152",
                size=224,
                batch=128,
                precision="amp-fp16",
                optimizer="sgd",
                description="ResNet-152 image classification, 224², 1000 classes",
            ),
        ),
        Reference(
            "vgg16",
            "VGG-16, 224², batch 64, SGD, fp16 autocast",
            partial(
                _images,
                "vgg16",
                "VGG16",
                size=224,
                batch=64,
                precision="amp-fp16",
                optimizer="sgd",
                description="VGG-16 image classification, 224², 1000 classes",
            ),
        ),
        Reference(
            "inception-v3",
            "Inception v3, 299², batch 64, SGD, fp16 autocast",
            partial(
                _images,
                "inception-v3",
                "InceptionV3",
                size=299,
                batch=64,
                precision="amp-fp16",
                optimizer="sgd",
                description="Inception v3 image classification, 299², 1000 classes",
            ),
        ),
        Reference("bert-base", "BERT-base SQuAD fine-tuning, seq 384, batch 32", partial(_bert, "base")),
        Reference("bert-large", "BERT-large SQuAD fine-tuning, seq 384, batch 16", partial(_bert, "large")),
        Reference("gpt2", "GPT-2 124M, seq 1024, batch 8, bf16 autocast", _gpt2),
        Reference("llama-8b", "Llama-3 8B, seq 2048, batch 1, bf16 (profile only)", _llama),
        Reference("gnmt", "GNMT-style LSTM seq2seq, batch 128", _gnmt),
        Reference("ncf", "NCF / NeuMF recommender, batch 65536", _ncf),
    )
}
