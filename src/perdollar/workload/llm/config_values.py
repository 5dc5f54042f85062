"""The values of a model's config.json, checked as what they are: data from outside.

A size must be a whole number in a sane range (not 0, "abc", a dict, NaN or Infinity), the heads
must divide the width, a token cannot be routed to more experts than there are. Each check fails
in one line that names the key and the fix. :func:`unread_shape_keys` names the keys that look like
they shape the model but that perdollar does not read, so that a reading is never silently wrong.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from perdollar.errors import PerdollarError

# Beyond these a config describes no model that exists (the largest published ones are a tenth of
# that); past them building the model, even on the meta device, would not end.
LIMITS = {
    "hidden_size": 1 << 20,
    "num_layers": 10_000,
    "num_attention_heads": 65_536,
    "num_key_value_heads": 65_536,
    "head_dim": 1 << 16,
    "intermediate_size": 1 << 24,
    "vocab_size": 1 << 26,
    "max_position_embeddings": 1 << 40,
    "num_experts": 1 << 16,
    "experts_per_token": 1 << 16,
    "window": 1 << 40,
    "rank": 1 << 20,
}

# Keys perdollar reads (architecture.py), under any of the names families use.
READ_KEYS = frozenset(
    {
        "model_type",
        "hidden_size",
        "n_embd",
        "d_model",
        "num_hidden_layers",
        "n_layer",
        "num_layers",
        "num_attention_heads",
        "n_head",
        "num_heads",
        "n_heads",
        "intermediate_size",
        "n_inner",
        "ffn_hidden_size",
        "max_position_embeddings",
        "n_positions",
        "n_ctx",
        "seq_length",
        "num_local_experts",
        "num_experts",
        "n_routed_experts",
        "num_experts_per_tok",
        "moe_top_k",
        "top_k",
        "num_key_value_heads",
        "num_kv_heads",
        "multi_query",
        "new_decoder_architecture",
        "head_dim",
        "vocab_size",
        "tie_word_embeddings",
        "attention_bias",
        "moe_intermediate_size",
        "shared_expert_intermediate_size",
        "n_shared_experts",
        "first_k_dense_replace",
        "moe_layer_freq",
        "decoder_sparse_step",
        "mlp_only_layers",
        "kv_lora_rank",
        "q_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "v_head_dim",
        "sliding_window",
        "use_sliding_window",
        "max_window_layers",
        "layer_types",
        "sliding_window_pattern",
        "intermediate_size_mlp",
        "interleave_moe_layer_step",
        "moe_layers",
        "attention_chunk_size",
        "no_rope_layers",
        "text_config",
        "expansion_ratio",
        "n_kv_heads",
        "use_qk_norm",
        "num_nextn_predict_layers",
        "mtp_num_hidden_layers",
    }
)
# Keys known not to change any parameter's shape (numerics, initialisation, routing rules, tokens).
# Patterns, compiled on first use (re keeps them): compiling this alternation costs tens of
# milliseconds, which every command would pay at start-up though only reading a config.json needs it.
_NOT_SHAPES = (
    r"(^_|eps|epsilon|theta|rope|scal|dropout|pdrop|init|act|activation|token_id|dtype|cache|"
    r"softcap|soft_cap|temperature|norm_topk|routed_scaling|topk_method|topk_group|n_group|aux|"
    r"jitter|loss|output_router|router_|architectures|transformers_version|name_or_path|auto_map|"
    r"quantization|attn_implementation|pretraining_tp|return_dict|torchscript|chunk_size_feed|"
    r"is_decoder|tie_|bias|use_|pad|bos|eos|sep|cls|mask|label|id2label|label2id|problem_type|"
    r"task|prefix|finetuning|tokenizer|gradient|logit|initializer|range|clip|seed|ep_size|"
    r"partial_rotary|original_max|max_window|position_embedding_type|hidden_act|layer_norm|"
    r"rms_norm|qk_layernorm|embedding_multiplier|residual_multiplier|attention_multiplier|"
    r"query_pre_attn|final_logit|attn_logit|swiglu_limit|router_aux|scoring_func|seq_aux|"
    r"mlp_bias|moe_layer_freq|sliding|tp_plan|pp_plan|base_model|chat_template|generation)"
)
# What a key that shapes parameters tends to be called.
_LOOKS_LIKE_SHAPE = (
    r"(size|dim|^num_|^n_|rank|layers|expert|heads|window|width|depth|ratio|moe|lora|shared|dense|"
    r"interleave|groups|vocab|kv|ffn|mlp|inner|proj)"
)


def unread_shape_keys(config: Mapping[str, object]) -> list[str]:
    """Keys of ``config`` that look like they change parameter shapes but that perdollar does not read."""
    unread = []
    for key, value in config.items():
        if key in READ_KEYS or re.search(_NOT_SHAPES, key) or not re.search(_LOOKS_LIKE_SHAPE, key):
            continue
        if value is None or value is False or value == [] or value == {}:
            continue  # an unset option shapes nothing
        unread.append(key)
    return sorted(unread)


def whole(key: str, value: object, *, minimum: int = 1, limit: str | None = None) -> int:
    """``value`` of config key ``key`` as a whole number of at least ``minimum``, or a one-line error."""
    bound = LIMITS.get(limit or key, 1 << 40)
    fix = f"set {key} to a whole number from {minimum} to {bound:,} (as the model's config.json states it)"
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = type(value).__name__ if isinstance(value, dict | list) else repr(value)[:40]
        raise PerdollarError(f"config key {key} is {shown}, not a whole number", fix)
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise PerdollarError(f"config key {key} is {value!r}, not a whole number", fix)
    number = int(value)
    if number < minimum or number > bound:
        raise PerdollarError(f"config key {key} is {number:,}, outside {minimum} to {bound:,}", fix)
    return number


def optional_whole(
    config: Mapping[str, object], key: str, *, minimum: int = 0, limit: str | None = None
) -> int:
    """A whole-number key that may be absent or null (0 then)."""
    value = config.get(key)
    return 0 if value is None else whole(key, value, minimum=minimum, limit=limit)


def check_consistent(
    *,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim_given: bool,
    experts: int,
    experts_per_token: int,
    dense_layers: int,
    layers: int,
) -> None:
    """The relations between sizes a config must keep, each a one-line error naming the keys."""
    if not head_dim_given and hidden % heads:
        raise PerdollarError(
            f"num_attention_heads ({heads}) does not divide hidden_size ({hidden})",
            "give a head count that divides hidden_size, or state head_dim",
        )
    if kv_heads > heads or heads % kv_heads:
        raise PerdollarError(
            f"num_key_value_heads ({kv_heads}) must divide num_attention_heads ({heads})",
            "give at most as many key-value heads as heads, a divisor of them",
        )
    if experts > 1 and experts_per_token > experts:
        raise PerdollarError(
            f"num_experts_per_tok ({experts_per_token}) exceeds the {experts} experts",
            "route each token to at most as many experts as the model has",
        )
    if dense_layers > layers:
        raise PerdollarError(
            f"first_k_dense_replace ({dense_layers}) exceeds num_hidden_layers ({layers})",
            "give at most as many dense layers as the model has layers",
        )
