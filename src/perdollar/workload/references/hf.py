"""Transformer reference models from Hugging Face ``transformers`` configs, randomly initialised.

Nothing is downloaded: each model is built from a config object written out here with the
published architecture's sizes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn

if TYPE_CHECKING:
    from transformers import BertConfig


def vit_b16(classes: int = 1000, image_size: int = 224) -> nn.Module:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        image_size=image_size,
        patch_size=16,
        num_labels=classes,
    )
    return ViTForImageClassification(config)


def _bert_config(size: str) -> BertConfig:
    from transformers import BertConfig

    # No dropout on attention probabilities, so that fused attention kernels apply (as on a GPU
    # with PyTorch's scaled_dot_product_attention); hidden-state dropout stays.
    if size == "base":
        return BertConfig(
            hidden_size=768,
            num_hidden_layers=12,
            num_attention_heads=12,
            intermediate_size=3072,
            attention_probs_dropout_prob=0.0,
        )
    return BertConfig(
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
        attention_probs_dropout_prob=0.0,
    )


def bert_qa(size: str) -> nn.Module:
    """BERT with a span-prediction head, as fine-tuned on SQuAD."""
    from transformers import BertForQuestionAnswering

    return BertForQuestionAnswering(_bert_config(size))


def bert_encoder(size: str) -> nn.Module:
    """The bare BERT encoder (no pooler, no task head): the usual reference for FLOP counts."""
    from transformers import BertModel

    return BertModel(_bert_config(size), add_pooling_layer=False)


def gpt2_small(seq_len: int = 1024) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_embd=768, n_layer=12, n_head=12, n_positions=max(1024, seq_len), vocab_size=50257, attn_pdrop=0.0
    )  # fused attention, as with BERT above
    return GPT2LMHeadModel(config)


def llama3_8b() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=4096,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        intermediate_size=14336,
        vocab_size=128256,
        max_position_embeddings=8192,
        rope_theta=500000.0,
    )
    return LlamaForCausalLM(config)
