"""A decoder-only language model described by its architecture alone (a Hugging Face config).

Everything the LLM training and serving models need is read here (into :class:`DecoderArchitecture`,
kept in :mod:`perdollar.workload.llm.decoder`): sizes, attention layout (MHA, GQA,
MQA, multi-head latent attention), sliding-window layers, the MLP's shape (gated or not), routed
and shared experts and the dense layers beside them (MoE), and the parameter and KV-cache counts
that follow from them, role by role. Nothing is downloaded and no weights are built: the reading
is checked against the ``transformers`` model built on the meta device (``meta_model.role_census``),
by the tests for the families below and at load time for any other family.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from perdollar.errors import PerdollarError
from perdollar.files import read_user_bytes, shorten
from perdollar.jsonable import JsonObject
from perdollar.workload.llm.config_values import check_consistent, optional_whole, whole
from perdollar.workload.llm.decoder import DecoderArchitecture

__all__ = ["DecoderArchitecture", "from_hf_config", "language_model_config", "load_config_file"]

# Families whose MLP is not gated (two matrices, up and down); every other family perdollar reads
# gates its MLP (SwiGLU/GeGLU: three matrices of hidden × intermediate).
UNGATED_MLP_TYPES = frozenset(
    {
        "gpt2",
        "gpt_neo",
        "gpt_neox",
        "gpt_bigcode",
        "falcon",
        "opt",
        "mpt",
        "bloom",
        "phi",
        "starcoder2",
        "gptj",
        "nemotron",  # squared-ReLU up and down projections (transformers' NemotronMLP)
    }
)
# Families with learned absolute position embeddings (a table of max_positions × hidden).
LEARNED_POSITION_TYPES = frozenset({"gpt2", "gpt_neo", "gpt_bigcode", "opt"})
# Families whose configs tie the LM head to the embedding unless they say otherwise.
TIED_BY_DEFAULT_TYPES = frozenset(
    {"gpt2", "gpt_neo", "gpt_bigcode", "falcon", "gemma", "gemma2", "gemma3_text", "opt", "mpt"}
)
# Families whose q/k/v projections carry a bias unless the config says otherwise.
ATTENTION_BIAS_TYPES = frozenset({"qwen2", "qwen2_moe", "gpt2"})
# Families whose config names differ from Llama's (key in config → our field).
_KEY_ALIASES: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
    "intermediate_size": ("intermediate_size", "n_inner", "ffn_hidden_size"),
    "max_position_embeddings": (
        "max_position_embeddings",
        "n_positions",
        "n_ctx",
        "seq_length",
        "max_seq_len",
    ),
    "num_experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "moe_top_k", "top_k"),
}


# Multimodal configs whose language model is described by a nested text_config.
_TEXT_CONFIG_TYPES = {
    "llama4": "llama4_text",
    "gemma3": "gemma3_text",
    "mistral3": "mistral",
    "qwen2_vl": "qwen2",
}


def language_model_config(config: Mapping[str, object]) -> Mapping[str, object]:
    """The language model's part of a config (a multimodal config's ``text_config``)."""
    nested = config.get("text_config")
    model_type = str(config.get("model_type") or "").lower()
    if isinstance(nested, dict) and model_type in _TEXT_CONFIG_TYPES:
        merged = {"tie_word_embeddings": config.get("tie_word_embeddings", False), **nested}
        merged.setdefault("model_type", _TEXT_CONFIG_TYPES[model_type])
        return merged
    return config


def _sliding_layers(config: Mapping[str, object], model_type: str, layers: int, window: int) -> int:
    """How many layers attend to a window only, as transformers lays them out per family."""
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        return sum(1 for kind in layer_types[:layers] if kind in ("sliding_attention", "chunked_attention"))
    if not window:
        return 0
    if model_type in ("gemma2", "gpt_oss"):
        return (layers + 1) // 2  # alternating, the first layer local
    if model_type in ("gemma3", "gemma3_text"):
        pattern = optional_whole(config, "sliding_window_pattern", minimum=1) or 6
        return layers - layers // pattern  # every pattern-th layer global
    if model_type == "llama4_text":
        return layers - layers // 4  # every fourth layer global (no rotary embedding), the rest chunked
    if model_type in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        if not config.get("use_sliding_window"):
            return 0
        return max(layers - optional_whole(config, "max_window_layers", limit="num_layers"), 0)
    return layers  # Mistral, Mixtral, Phi-3: every layer


class _ExpertFields(TypedDict, total=False):
    """The mixture-of-experts fields of a :class:`DecoderArchitecture` beside the experts' width
    (absent: a dense model's)."""

    num_experts: int
    experts_per_token: int
    shared_intermediate_size: int
    dense_layers: int
    dense_intermediate_size: int
    expert_bias: bool


class _LatentFields(TypedDict, total=False):
    """The multi-head latent attention fields of a :class:`DecoderArchitecture` beside its head width."""

    kv_lora_rank: int
    q_lora_rank: int
    qk_rope_head_dim: int
    v_head_dim: int


def _experts(
    config: Mapping[str, object], model_type: str, layers: int, hidden: int, dense_width: int
) -> tuple[_ExpertFields, int]:
    """The MoE fields: routed experts, shared experts and the dense layers beside them; and the
    experts' width (``dense_width`` for a dense model)."""
    count = 0
    for key in ("num_local_experts", "num_experts", "n_routed_experts"):
        if config.get(key) is not None:
            count = whole(key, config[key], minimum=0, limit="num_experts")
            break
    if count <= 1:
        return {"num_experts": 1, "experts_per_token": 1}, dense_width
    per_token = 1
    for key in ("num_experts_per_tok", "moe_top_k", "top_k"):
        if config.get(key) is not None:
            per_token = whole(key, config[key], limit="experts_per_token")
            break
    width = optional_whole(config, "moe_intermediate_size", limit="intermediate_size") or dense_width
    if model_type == "llama4_text":
        width = dense_width  # the experts' width; intermediate_size_mlp is the dense layers'
    shared = optional_whole(config, "shared_expert_intermediate_size", limit="intermediate_size")
    shared += optional_whole(config, "n_shared_experts", limit="num_experts") * width
    if model_type == "llama4_text":
        shared = width  # one shared expert of the routed experts' width in every MoE layer
    dense = optional_whole(config, "first_k_dense_replace", limit="num_layers")
    dense_width_key = "intermediate_size_mlp" if model_type == "llama4_text" else "intermediate_size"
    step = optional_whole(config, "decoder_sparse_step", limit="num_layers") or optional_whole(
        config, "interleave_moe_layer_step", limit="num_layers"
    )
    if step > 1:
        dense = layers - layers // step
    only_dense = config.get("mlp_only_layers")
    if isinstance(only_dense, list):
        dense += len({i for i in only_dense if isinstance(i, int) and 0 <= i < layers})
    fields: _ExpertFields = {
        "num_experts": count,
        "experts_per_token": per_token,
        "shared_intermediate_size": shared,
        "dense_layers": min(dense, layers),
        # Set only where there are dense layers: a default field leaves the stored traces' keys as they were.
        "dense_intermediate_size": (
            optional_whole(config, dense_width_key, limit="intermediate_size") or dense_width if dense else 0
        ),
        "expert_bias": model_type == "gpt_oss",
    }
    return fields, width


def _latent_attention(config: Mapping[str, object]) -> tuple[_LatentFields, int | None]:
    """Multi-head latent attention's fields and its head width (None without it)."""
    rank = optional_whole(config, "kv_lora_rank", limit="rank")
    if not rank:
        return {}, None
    rope = optional_whole(config, "qk_rope_head_dim", limit="head_dim")
    nope = optional_whole(config, "qk_nope_head_dim", limit="head_dim")
    fields: _LatentFields = {
        "kv_lora_rank": rank,
        "q_lora_rank": optional_whole(config, "q_lora_rank", limit="rank"),
        "qk_rope_head_dim": rope,
        "v_head_dim": optional_whole(config, "v_head_dim", limit="head_dim") or nope,
    }
    return fields, nope + rope


def from_hf_config(config: Mapping[str, object], *, name: str | None = None) -> DecoderArchitecture:
    """Read a Hugging Face ``config.json`` (already parsed) of a decoder-only model."""
    config = language_model_config(config)

    def first(field: str) -> tuple[str, object]:
        for key in _KEY_ALIASES.get(field, (field,)):
            value = config.get(key)
            if value is not None:
                return key, value
        return _KEY_ALIASES.get(field, (field,))[0], None

    model_type = str(config.get("model_type") or "").lower()
    found = {field: first(field) for field in ("hidden_size", "num_layers", "num_attention_heads")}
    found["vocab_size"] = ("vocab_size", config.get("vocab_size"))
    missing = [key for key, value in found.values() if value is None]
    if missing:
        raise PerdollarError(
            f"the model config lacks {', '.join(missing)}",
            "give a decoder model's Hugging Face config.json (llama, mistral, qwen2, gpt2, gpt_neox …)",
        )
    hidden, layers, heads, vocab = (whole(key, value, limit=field) for field, (key, value) in found.items())
    if config.get("multi_query") and not config.get("new_decoder_architecture"):
        kv_heads = 1  # Falcon-7B style multi-query attention
    else:
        kv_key, kv_value = next(
            ((k, config[k]) for k in ("num_key_value_heads", "num_kv_heads", "n_kv_heads") if config.get(k)),
            ("num_key_value_heads", heads),
        )
        kv_heads = whole(kv_key, kv_value, limit="num_key_value_heads")
    head_dim = optional_whole(config, "head_dim") or hidden // heads
    intermediate_key, intermediate = first("intermediate_size")
    if intermediate is None and config.get("expansion_ratio") is not None:
        intermediate_key, intermediate = (
            "expansion_ratio",
            whole("expansion_ratio", config["expansion_ratio"]),
        )
        intermediate *= hidden
    dense_width = (
        whole(intermediate_key, intermediate, limit="intermediate_size") if intermediate else 4 * hidden
    )
    experts, expert_width = _experts(config, model_type, layers, hidden, dense_width)
    latent, latent_head_dim = _latent_attention(config)
    check_consistent(
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim_given=bool(config.get("head_dim")) or bool(latent),
        experts=experts["num_experts"],
        experts_per_token=experts["experts_per_token"],
        dense_layers=experts.get("dense_layers", 0),
        layers=layers,
    )
    window = optional_whole(config, "sliding_window", limit="window")
    if model_type == "llama4_text":
        window = optional_whole(config, "attention_chunk_size", limit="window")
    sliding = _sliding_layers(config, model_type, layers, window) if window else 0
    return DecoderArchitecture(
        name=name or str(config.get("_name_or_path") or model_type or "model"),
        model_type=model_type,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads if latent else kv_heads,
        head_dim=latent_head_dim if latent_head_dim is not None else head_dim,
        intermediate_size=expert_width,
        vocab_size=vocab,
        max_position_embeddings=optional_whole(config, first("max_position_embeddings")[0], limit=None)
        or 2048,
        gated_mlp=model_type not in UNGATED_MLP_TYPES,
        tie_word_embeddings=bool(config.get("tie_word_embeddings", model_type in TIED_BY_DEFAULT_TYPES)),
        attention_bias=bool(config.get("attention_bias", model_type in ATTENTION_BIAS_TYPES)),
        learned_positions=model_type in LEARNED_POSITION_TYPES,
        sliding_window=window if sliding else 0,
        sliding_layers=sliding,
        attention_sinks=model_type == "gpt_oss",
        mtp_layers=optional_whole(config, "num_nextn_predict_layers", limit="num_layers")
        or optional_whole(config, "mtp_num_hidden_layers", limit="num_layers"),
        checkpoint_format=checkpoint_format(config),
        **experts,
        **latent,
    )


# quantization_config's quant_method → the serving format perdollar names it by.
_CHECKPOINT_FORMATS = {"mxfp4": "mxfp4", "fp8": "fp8", "fbgemm_fp8": "fp8", "awq": "awq", "gptq": "gptq"}


def checkpoint_format(config: Mapping[str, object]) -> str:
    """The serving format a checkpoint's weights are stored in, from its ``quantization_config``
    ("" for 16-bit weights or a method perdollar does not model)."""
    quantization = config.get("quantization_config")
    method = quantization.get("quant_method") if isinstance(quantization, dict) else None
    return _CHECKPOINT_FORMATS.get(str(method).lower(), "") if method is not None else ""


MAX_CONFIG_BYTES = 4 << 20  # the largest config.json on the Hub is a few hundred kilobytes


def load_config_file(path: Path) -> JsonObject:
    """A ``config.json`` from disk, with one-line errors for the usual mistakes."""
    try:
        if path.is_dir():
            path = path / "config.json"
        present = path.exists()
    except OSError:  # a name the file system refuses (too long, say)
        present = False
    if not present:
        raise PerdollarError(
            f"model config {shorten(str(path))!r} does not exist", "give the path of a config.json"
        )
    data = read_user_bytes(
        path, "model config", MAX_CONFIG_BYTES, "give a Hugging Face config.json",
        smaller="give the model's config.json (a few kilobytes), not its weights or tokenizer",
    )  # fmt: skip
    try:
        document = json.loads(data)
    except RecursionError:
        raise PerdollarError(
            f"{shorten(str(path))!r} nests its JSON too deeply to be a model config",
            "give a Hugging Face config.json",
        ) from None
    except (UnicodeDecodeError, ValueError) as error:  # JSONDecodeError is a ValueError
        raise PerdollarError(
            f"{str(path)!r} is not JSON ({error})", "give a Hugging Face config.json"
        ) from None
    if not isinstance(document, dict):
        raise PerdollarError(f"{str(path)!r} is not a JSON object", "give a Hugging Face config.json")
    return document
