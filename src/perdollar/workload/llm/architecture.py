"""A decoder-only language model described by its architecture alone (a Hugging Face config).

Everything the LLM training and serving models need is here: sizes, attention layout (MHA, GQA,
MQA, multi-head latent attention), sliding-window layers, the MLP's shape (gated or not), routed
and shared experts and the dense layers beside them (MoE), and the parameter and KV-cache counts
that follow from them, role by role. Nothing is downloaded and no weights are built: the reading
is checked against the ``transformers`` model built on the meta device (``meta_model.role_census``),
by the tests for the families below and at load time for any other family.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from perdollar.errors import PerdollarError
from perdollar.files import shorten
from perdollar.workload.llm.config_values import check_consistent, optional_whole, whole

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


@dataclass(frozen=True, slots=True)
class DecoderArchitecture:
    """The sizes of a decoder-only transformer, as its config states them."""

    name: str
    model_type: str  # the config's model_type: llama, mistral, qwen2, gpt2, gpt_neox, mixtral …
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_key_value_heads: int  # = heads for MHA, 1 for MQA, in between for GQA
    head_dim: int  # of queries and keys (MLA: the non-rotary part plus the rotary part)
    intermediate_size: int  # per routed expert for MoE
    vocab_size: int
    max_position_embeddings: int
    gated_mlp: bool  # SwiGLU/GeGLU (3 matrices) rather than up/down (2 matrices)
    tie_word_embeddings: bool = False
    num_experts: int = 1  # routed experts; 1: dense
    experts_per_token: int = 1
    attention_bias: bool = False  # q/k/v projections carry a bias (Qwen2, GPT-2)
    learned_positions: bool = False  # a learned position-embedding table (GPT-2 style), not rotary
    # Mixture of experts beyond the routed experts: layers whose MLP stays dense (DeepSeek's first
    # k, Qwen's mlp_only_layers, Llama 4's interleaving) and their width; the shared experts every
    # token passes through in each MoE layer (their widths summed).
    dense_layers: int = 0
    dense_intermediate_size: int = 0
    shared_intermediate_size: int = 0
    expert_bias: bool = False  # the experts' and the router's matrices carry biases (gpt-oss)
    # Multi-head latent attention (DeepSeek-V2/V3): keys and values through a compressed latent of
    # kv_lora_rank, a shared rotary key of qk_rope_head_dim, queries through q_lora_rank (0: direct).
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # Layers attending to the last sliding_window tokens only (Mistral, Gemma 2/3, gpt-oss); Llama 4's
    # chunked attention is held as such a window.
    sliding_window: int = 0
    sliding_layers: int = 0
    attention_sinks: bool = False  # a learned sink logit per head (gpt-oss): parameters, no KV
    # Parameters by role as transformers' model holds them, where perdollar's own reading of the
    # family is not known to match it (:mod:`perdollar.workload.llm.meta_model`); empty otherwise.
    role_params: tuple[tuple[str, int], ...] = ()

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe_layers(self) -> int:
        return self.num_layers - self.dense_layers if self.is_moe else 0

    @property
    def kv_dim(self) -> int:
        return self.num_key_value_heads * self.head_dim

    @property
    def attention_params_per_layer(self) -> int:
        if self.is_mla:
            return self._latent_attention_params
        q_out = self.num_attention_heads * self.head_dim
        weights = self.hidden_size * (q_out + 2 * self.kv_dim) + q_out * self.hidden_size
        bias = (q_out + 2 * self.kv_dim) if self.attention_bias else 0
        if self.attention_bias and self.model_type == "gpt_oss":
            bias += self.hidden_size  # its output projection's bias too
        sinks = self.num_attention_heads if self.attention_sinks else 0
        return weights + bias + sinks

    @property
    def _latent_attention_params(self) -> int:
        hidden, heads = self.hidden_size, self.num_attention_heads
        q_out = heads * self.head_dim
        if self.q_lora_rank:
            queries = hidden * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * q_out
        else:
            queries = hidden * q_out
        nope = self.head_dim - self.qk_rope_head_dim
        latent = hidden * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
        up = self.kv_lora_rank * heads * (nope + self.v_head_dim)
        return queries + latent + up + heads * self.v_head_dim * hidden

    def _mlp(self, width: int) -> int:
        matrices = 3 if self.gated_mlp else 2
        return matrices * self.hidden_size * width

    @property
    def expert_params(self) -> int:
        """One routed expert's MLP (or the dense MLP)."""
        bias = (2 * self.intermediate_size + self.hidden_size) if self.expert_bias else 0
        return self._mlp(self.intermediate_size) + bias

    @property
    def shared_expert_params(self) -> int:
        """The shared experts of one MoE layer, together."""
        return self._mlp(self.shared_intermediate_size)

    @property
    def router_params_per_layer(self) -> int:
        if not self.is_moe:
            return 0
        return self.hidden_size * self.num_experts + (self.num_experts if self.expert_bias else 0)

    @property
    def moe_layer_mlp_params(self) -> int:
        return (
            self.num_experts * self.expert_params + self.shared_expert_params + self.router_params_per_layer
        )

    @property
    def dense_layer_mlp_params(self) -> int:
        return self._mlp(self.dense_intermediate_size or self.intermediate_size)

    @property
    def mlp_params_per_layer(self) -> int:
        """The MLP of an average layer (MoE models: dense and MoE layers averaged)."""
        if not self.is_moe:
            return self.expert_params
        total = self.moe_layers * self.moe_layer_mlp_params + self.dense_layers * self.dense_layer_mlp_params
        return total // self.num_layers

    @property
    def norm_params_per_layer(self) -> int:
        # Gemma 2 and 3 norm before and after both attention and the MLP.
        return (4 if self.model_type in ("gemma2", "gemma3_text") else 2) * self.hidden_size

    @property
    def embedding_params(self) -> int:
        return self._role("embedding", self.vocab_size * self.hidden_size)

    @property
    def position_embedding_params(self) -> int:
        return self.max_position_embeddings * self.hidden_size if self.learned_positions else 0

    @property
    def lm_head_params(self) -> int:
        return self._role("head", 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size)

    @property
    def params_per_layer(self) -> int:
        return self.attention_params_per_layer + self.mlp_params_per_layer + self.norm_params_per_layer

    def _role(self, role: str, analytic: int) -> int:
        for name, count in self.role_params:
            if name == role:
                return count
        return analytic

    def params_by_role(self) -> dict[str, int]:
        """Every parameter held, by what it does (attention, routed experts, shared experts …)."""
        if self.role_params:
            return dict(self.role_params)
        moe = self.moe_layers
        dense = self.num_layers - moe
        roles = {
            "embedding": self.vocab_size * self.hidden_size + self.position_embedding_params,
            "attention": self.num_layers * self.attention_params_per_layer,
            "dense_mlp": dense * (self.dense_layer_mlp_params if self.is_moe else self.expert_params),
            "routed_experts": moe * self.num_experts * self.expert_params,
            "shared_experts": moe * self.shared_expert_params,
            "router": moe * self.router_params_per_layer,
            "norms": self.num_layers * self.norm_params_per_layer + self.hidden_size,  # + the final norm
            "head": 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size,
        }
        return {role: count for role, count in roles.items() if count}

    @property
    def total_params(self) -> int:
        """Every parameter held (all experts), biases of the MLP and norms' shifts ignored."""
        return sum(self.params_by_role().values())

    @property
    def inactive_params(self) -> int:
        """Routed experts' parameters a token does not pass through."""
        if not self.is_moe:
            return 0
        routed = self.params_by_role().get("routed_experts", 0)
        return routed * (self.num_experts - self.experts_per_token) // self.num_experts

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (the routed experts it is sent to only, for MoE)."""
        return self.total_params - self.inactive_params

    @property
    def kv_elements_per_layer(self) -> int:
        """Cache elements one token leaves in one layer: keys and values, or MLA's latent and rotary key."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.kv_dim

    @property
    def kv_elements_per_token(self) -> int:
        """Cache elements one token leaves over all layers, while the context is within every window."""
        return self.num_layers * self.kv_elements_per_layer

    def kv_elements(self, context: float) -> float:
        """Cache elements of one sequence of ``context`` tokens: sliding-window layers keep their window."""
        full = self.num_layers - self.sliding_layers
        windowed = min(context, self.sliding_window) if self.sliding_layers else 0.0
        return self.kv_elements_per_layer * (full * context + self.sliding_layers * windowed)

    def trace_identity(self) -> dict[str, Any]:
        """The fields that shape a trace, as stored trace keys name them (new fields only when set)."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "role_params"}
        defaults = {f.name: f.default for f in fields(self)}
        return {k: v for k, v in values.items() if k in _TRACE_FIELDS or v != defaults[k]}


_TRACE_FIELDS = frozenset(
    {
        "name",
        "model_type",
        "hidden_size",
        "num_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
        "max_position_embeddings",
        "gated_mlp",
        "tie_word_embeddings",
        "num_experts",
        "experts_per_token",
        "attention_bias",
        "learned_positions",
    }
)
# Multimodal configs whose language model is described by a nested text_config.
_TEXT_CONFIG_TYPES = {
    "llama4": "llama4_text",
    "gemma3": "gemma3_text",
    "mistral3": "mistral",
    "qwen2_vl": "qwen2",
}


def language_model_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's part of a config (a multimodal config's ``text_config``)."""
    nested = config.get("text_config")
    model_type = str(config.get("model_type") or "").lower()
    if isinstance(nested, dict) and model_type in _TEXT_CONFIG_TYPES:
        merged = {"tie_word_embeddings": config.get("tie_word_embeddings", False), **nested}
        merged.setdefault("model_type", _TEXT_CONFIG_TYPES[model_type])
        return merged
    return config


def _sliding_layers(config: Mapping[str, Any], model_type: str, layers: int, window: int) -> int:
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


def _experts(config: Mapping[str, Any], model_type: str, layers: int, hidden: int, dense_width: int) -> dict:
    """The MoE fields: routed experts, their width, shared experts and the dense layers beside them."""
    count = 0
    for key in ("num_local_experts", "num_experts", "n_routed_experts"):
        if config.get(key) is not None:
            count = whole(key, config[key], minimum=0, limit="num_experts")
            break
    if count <= 1:
        return {"num_experts": 1, "experts_per_token": 1}
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
    return {
        "num_experts": count,
        "experts_per_token": per_token,
        "intermediate_size": width,
        "shared_intermediate_size": shared,
        "dense_layers": min(dense, layers),
        "dense_intermediate_size": optional_whole(config, dense_width_key, limit="intermediate_size")
        or dense_width,
        "expert_bias": model_type == "gpt_oss",
    }


def _latent_attention(config: Mapping[str, Any]) -> dict:
    rank = optional_whole(config, "kv_lora_rank", limit="rank")
    if not rank:
        return {}
    rope = optional_whole(config, "qk_rope_head_dim", limit="head_dim")
    nope = optional_whole(config, "qk_nope_head_dim", limit="head_dim")
    return {
        "kv_lora_rank": rank,
        "q_lora_rank": optional_whole(config, "q_lora_rank", limit="rank"),
        "qk_rope_head_dim": rope,
        "v_head_dim": optional_whole(config, "v_head_dim", limit="head_dim") or nope,
        "head_dim": nope + rope,
    }


def from_hf_config(config: Mapping[str, Any], *, name: str | None = None) -> DecoderArchitecture:
    """Read a Hugging Face ``config.json`` (already parsed) of a decoder-only model."""
    config = language_model_config(config)

    def first(field: str) -> tuple[str, Any]:
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
    experts = _experts(config, model_type, layers, hidden, dense_width)
    latent = _latent_attention(config)
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
        head_dim=latent.pop("head_dim", head_dim),
        intermediate_size=experts.pop("intermediate_size", dense_width),
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
        **experts,
        **latent,
    )


MAX_CONFIG_BYTES = 4 << 20  # the largest config.json on the Hub is a few hundred kilobytes


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
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise PerdollarError(
                f"{shorten(str(path))!r} is {size:,} bytes, more than a model config's {MAX_CONFIG_BYTES:,}",
                "give the model's config.json (a few kilobytes), not its weights or tokenizer",
            )
        document = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise PerdollarError(
            f"{shorten(str(path))!r} nests its JSON too deeply to be a model config",
            "give a Hugging Face config.json",
        ) from None
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
