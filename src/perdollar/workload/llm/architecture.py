"""A decoder-only language model described by its architecture alone (a Hugging Face config).

Everything the LLM training and serving models need is here: sizes, attention layout (MHA, GQA,
MQA), the MLP's shape (gated or not), experts (MoE), and the parameter and KV-cache counts that
follow from them. Nothing is downloaded and no weights are built.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perdollar.errors import PerdollarError
from perdollar.files import shorten

# Model families whose MLP is gated (SwiGLU/GeGLU: three matrices of hidden × intermediate).
GATED_MLP_TYPES = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "gemma", "gemma2"})
# Families with learned absolute position embeddings (a table of max_positions × hidden).
LEARNED_POSITION_TYPES = frozenset({"gpt2", "gpt_neo", "gpt_bigcode", "opt"})
# Families whose configs tie the LM head to the embedding unless they say otherwise.
TIED_BY_DEFAULT_TYPES = frozenset({"gpt2", "gpt_neo", "gpt_bigcode", "falcon", "gemma", "gemma2", "opt"})
# Families whose config names differ from Llama's (key in config → our field).
_KEY_ALIASES: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads"),
    "intermediate_size": ("intermediate_size", "n_inner", "ffn_hidden_size"),
    "max_position_embeddings": ("max_position_embeddings", "n_positions", "n_ctx", "seq_length"),
    "num_experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "moe_top_k", "top_k"),
}


@dataclass(frozen=True, slots=True)
class DecoderArchitecture:
    """The sizes of a decoder-only transformer, as its config states them."""

    name: str
    model_type: str  # the config's model_type: llama, mistral, qwen2, gpt2, gpt_neox, mixtral …
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_key_value_heads: int  # = heads for MHA, 1 for MQA, in between for GQA
    head_dim: int
    intermediate_size: int  # per expert for MoE
    vocab_size: int
    max_position_embeddings: int
    gated_mlp: bool  # SwiGLU/GeGLU (3 matrices) rather than up/down (2 matrices)
    tie_word_embeddings: bool = False
    num_experts: int = 1  # 1: dense
    experts_per_token: int = 1
    attention_bias: bool = False  # q/k/v projections carry a bias (Qwen2, GPT-2)
    learned_positions: bool = False  # a learned position-embedding table (GPT-2 style), not rotary

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def kv_dim(self) -> int:
        return self.num_key_value_heads * self.head_dim

    @property
    def attention_params_per_layer(self) -> int:
        q_out = self.num_attention_heads * self.head_dim
        weights = self.hidden_size * (q_out + 2 * self.kv_dim) + q_out * self.hidden_size
        bias = (q_out + 2 * self.kv_dim) if self.attention_bias else 0
        return weights + bias

    @property
    def expert_params(self) -> int:
        """One expert's MLP (or the dense MLP)."""
        matrices = 3 if self.gated_mlp else 2
        return matrices * self.hidden_size * self.intermediate_size

    @property
    def mlp_params_per_layer(self) -> int:
        router = self.hidden_size * self.num_experts if self.is_moe else 0
        return self.num_experts * self.expert_params + router

    @property
    def norm_params_per_layer(self) -> int:
        return 2 * self.hidden_size

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def position_embedding_params(self) -> int:
        return self.max_position_embeddings * self.hidden_size if self.learned_positions else 0

    @property
    def lm_head_params(self) -> int:
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @property
    def params_per_layer(self) -> int:
        return self.attention_params_per_layer + self.mlp_params_per_layer + self.norm_params_per_layer

    @property
    def total_params(self) -> int:
        """Every parameter held (all experts), biases of the MLP and norms' shifts ignored."""
        return (
            self.num_layers * self.params_per_layer
            + self.embedding_params
            + self.position_embedding_params
            + self.lm_head_params
            + self.hidden_size  # final norm
        )

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (the routed experts only, for MoE)."""
        inactive = (self.num_experts - self.experts_per_token) * self.expert_params if self.is_moe else 0
        return self.total_params - self.num_layers * inactive

    @property
    def kv_elements_per_token(self) -> int:
        """Key and value elements one token leaves in the cache, over all layers."""
        return 2 * self.num_layers * self.kv_dim


def from_hf_config(config: Mapping[str, Any], *, name: str | None = None) -> DecoderArchitecture:
    """Read a Hugging Face ``config.json`` (already parsed) of a decoder-only model."""

    def first(field: str, default: Any = None) -> Any:
        for key in _KEY_ALIASES.get(field, (field,)):
            value = config.get(key)
            if value is not None:
                return value
        return default

    model_type = str(config.get("model_type") or "").lower()
    hidden = first("hidden_size")
    layers = first("num_layers")
    heads = first("num_attention_heads")
    vocab = config.get("vocab_size")
    missing = [
        k
        for k, v in (
            ("hidden_size", hidden),
            ("num_hidden_layers", layers),
            ("num_attention_heads", heads),
            ("vocab_size", vocab),
        )
        if v is None
    ]
    if missing:
        raise PerdollarError(
            f"the model config lacks {', '.join(missing)}",
            "give a decoder model's Hugging Face config.json (llama, mistral, qwen2, gpt2, gpt_neox …)",
        )
    hidden, layers, heads, vocab = int(hidden), int(layers), int(heads), int(vocab)
    if config.get("multi_query") and not config.get("new_decoder_architecture"):
        kv_heads = 1  # Falcon-7B style multi-query attention
    else:
        kv_heads = int(config.get("num_key_value_heads") or config.get("num_kv_heads") or heads)
    head_dim = int(config.get("head_dim") or hidden // heads)
    gated = model_type in GATED_MLP_TYPES
    intermediate = first("intermediate_size")
    if model_type == "mixtral" or model_type.endswith("_moe"):
        intermediate = config.get("moe_intermediate_size") or intermediate
    if intermediate is None:
        intermediate = 4 * hidden  # GPT-2, GPT-NeoX and Falcon leave it implicit
    experts = int(first("num_experts", 1) or 1)
    return DecoderArchitecture(
        name=name or str(config.get("_name_or_path") or model_type or "model"),
        model_type=model_type,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=int(intermediate),
        vocab_size=vocab,
        max_position_embeddings=int(first("max_position_embeddings", 2048) or 2048),
        gated_mlp=gated,
        tie_word_embeddings=bool(config.get("tie_word_embeddings", model_type in TIED_BY_DEFAULT_TYPES)),
        num_experts=experts,
        experts_per_token=int(first("experts_per_token", 1) or 1) if experts > 1 else 1,
        attention_bias=bool(config.get("attention_bias", model_type in ("qwen2", "gpt2"))),
        learned_positions=model_type in LEARNED_POSITION_TYPES,
    )


def load_config_file(path: Path) -> dict[str, Any]:
    """A ``config.json`` from disk, with one-line errors for the usual mistakes."""
    try:
        if path.is_dir():
            path = path / "config.json"
        present = path.is_file()
    except OSError:  # a name the file system refuses (too long, say)
        present = False
    if not present:
        raise PerdollarError(
            f"model config {shorten(str(path))!r} does not exist", "give the path of a config.json"
        )
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise PerdollarError(
            f"cannot read {str(path)!r} ({error.strerror})", "check its permissions"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PerdollarError(
            f"{str(path)!r} is not JSON ({error})", "give a Hugging Face config.json"
        ) from None
    if not isinstance(document, dict):
        raise PerdollarError(f"{str(path)!r} is not a JSON object", "give a Hugging Face config.json")
    return document
