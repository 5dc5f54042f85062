"""The built-in reference workloads: name → a :class:`~perdollar.workload.spec.Workload` at its defaults.

Every reference is randomly initialised and never downloaded. The defaults (batch size,
precision, optimizer) follow the setups that the published measurements used, so a reference
can be compared with them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from perdollar.workload.spec import Workload

# The model and input modules import torch (about a second): each builder imports what it uses,
# so that naming or listing the references, or loading a user's file, does not.


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
    from perdollar.workload.references import hf, inputs, vision

    factory = partial(getattr(hf, model), 1000, size) if hf_style else getattr(vision, model)
    input_factory = partial(inputs.image_dict if hf_style else inputs.images, size=size, classes=1000)
    return Workload(
        name=name,
        model_factory=factory,
        input_factory=input_factory,
        batch_size=batch,
        loss_fn=None if hf_style else inputs.cross_entropy,
        precision=precision,
        optimizer=optimizer,
        learning_rate=0.1 if optimizer == "sgd" else 1e-4,
        sample_unit="images",
        config={"image_size": size, "classes": 1000},
        description=description,
    )


def _bert(size: str) -> Workload:
    from perdollar.workload.references import hf, inputs

    seq_len = 384
    return Workload(
        name=f"bert-{size}",
        model_factory=partial(hf.bert_qa, size),
        input_factory=partial(inputs.question_answering, seq_len=seq_len, vocab=30522),
        batch_size=32 if size == "base" else 16,
        precision="amp-fp16",
        optimizer="adamw",
        learning_rate=3e-5,
        sample_unit="sequences",
        config={"seq_len": seq_len, "vocab": 30522, "head": "squad-span", "tokens_per_sample": seq_len},
        description=f"BERT-{size} SQuAD-style question-answering fine-tuning, sequence {seq_len}",
    )


def _gpt2() -> Workload:
    from perdollar.workload.references import hf, inputs

    seq_len = 1024
    return Workload(
        name="gpt2",
        model_factory=partial(hf.gpt2_small, seq_len),
        input_factory=partial(inputs.causal_lm, seq_len=seq_len, vocab=50257),
        batch_size=8,
        precision="amp-bf16",
        optimizer="adamw",
        learning_rate=3e-4,
        sample_unit="sequences",
        config={"seq_len": seq_len, "vocab": 50257, "tokens_per_sample": seq_len},
        description="GPT-2 small (124M) causal language-model training, sequence 1024",
    )


def _llama() -> Workload:
    from perdollar.workload.references import hf, inputs

    seq_len = 2048
    return Workload(
        name="llama-8b",
        model_factory=hf.llama3_8b,
        input_factory=partial(inputs.causal_lm, seq_len=seq_len, vocab=128256),
        batch_size=1,
        precision="bf16",
        optimizer="adamw",
        learning_rate=1e-5,
        sample_unit="sequences",
        config={"seq_len": seq_len, "vocab": 128256, "tokens_per_sample": seq_len, "profile_only": True},
        description="Llama-3 8B full fine-tuning, sequence 2048 (profile only: never materialised)",
    )


def _mlp() -> Workload:
    from perdollar.workload.references import inputs, small

    return Workload(
        name="mlp",
        model_factory=small.mlp,
        input_factory=partial(inputs.features, width=256, classes=10),
        batch_size=64,
        loss_fn=inputs.cross_entropy,
        precision="fp32",
        optimizer="adamw",
        learning_rate=1e-3,
        sample_unit="samples",
        config={"width": 256, "hidden": 1024, "depth": 2},
        description="a tiny 3-layer perceptron (256→1024→1024→10) for quick checks",
    )


def _ncf() -> Workload:
    from perdollar.workload.references import small

    return Workload(
        name="ncf",
        model_factory=small.NeuMF,
        input_factory=small.ncf_inputs,
        batch_size=65536,
        loss_fn=small.ncf_loss,
        precision="amp-fp16",
        optimizer="adam",
        learning_rate=4.5e-3,
        sample_unit="samples",
        config={"users": 138_493, "items": 26_744, "factors": 64},
        description="NCF (NeuMF) on MovieLens-20M shapes; published runs use batches of about 1M",
    )


def _gnmt() -> Workload:
    from perdollar.workload.references import small

    seq_len = 50
    return Workload(
        name="gnmt",
        model_factory=small.GNMT,
        input_factory=partial(small.gnmt_inputs, seq_len=seq_len),
        batch_size=128,
        loss_fn=small.gnmt_loss,
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
