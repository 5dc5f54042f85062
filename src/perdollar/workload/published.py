"""Which reference workload a published measurement's model name corresponds to.

The table is explicit on purpose: a published row maps to a reference only where the
architecture (and, for transformers, the task head) is the same. Different tasks on the same
backbone (BERT pre-training, SSD300 on ResNet-50) and different model sizes (GPT-2 Large,
Llama 70B) map to nothing.
"""

from __future__ import annotations

PUBLISHED_MODEL_TO_REFERENCE: dict[str, str] = {
    "ResNet-50 v1.5 (NVIDIA DLE)": "resnet50",
    "ResNet-50 v1.5 (TensorFlow 1)": "resnet50",
    "ResNet-50 v1.5": "resnet50",
    "ResNet-50 (tf_cnn_benchmarks)": "resnet50",
    "ResNet-152 (tf_cnn_benchmarks)": "resnet152",
    "VGG-16 (tf_cnn_benchmarks)": "vgg16",
    "VGG16 (tf_cnn_benchmarks)": "vgg16",
    "Inception v3 (tf_cnn_benchmarks)": "inception-v3",
    "InceptionV3 (tf_cnn_benchmarks)": "inception-v3",
    "BERT-base SQuAD v1.1 fine-tune": "bert-base",
    "BERT-base SQuAD v1.1 inference (TF2)": "bert-base",
    "BERT-large SQuAD v1.1 fine-tune": "bert-large",
    "BERT-large SQuAD v1.1 fine-tune (TF2)": "bert-large",
    "BERT-large SQuAD v1.1 inference": "bert-large",
    "BERT-large SQuAD v1.1 inference (TF2)": "bert-large",
    "BERT-large (HF, random init)": "bert-large",
    "GNMT v2 (WMT16 en-de)": "gnmt",
    "NCF (MovieLens-20M)": "ncf",
    "Llama 3 8B (llama.cpp GGUF F16)": "llama-8b",
    "Llama 3 8B (llama.cpp GGUF Q4_K_M)": "llama-8b",
    "LLaMA v3.1 8B": "llama-8b",
    "Llama 3.1 8B": "llama-8b",
}

_BY_FOLDED_NAME = {name.casefold().strip(): ref for name, ref in PUBLISHED_MODEL_TO_REFERENCE.items()}


def reference_for_published_model(model_name: str) -> str | None:
    """The reference workload measured under ``model_name`` in the published set, or None.

    A reference's own name ("resnet50") is itself: perdollar's own measurements, written in the
    published schema by ``benchmarks/gpu_references.py``, name the workload that way.
    """
    folded = str(model_name).casefold().strip()
    if folded in _BY_FOLDED_NAME:
        return _BY_FOLDED_NAME[folded]
    from perdollar.workload.references import REFERENCES

    return folded if folded in REFERENCES else None
