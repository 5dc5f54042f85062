"""The sizes of a decoder-only transformer and the parameter and KV-cache counts, role by role,
that follow from them (read from a config by :mod:`perdollar.workload.llm.architecture`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields


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
    # Multi-token-prediction modules the checkpoint ships beside its layers (DeepSeek-V3's
    # num_nextn_predict_layers, Qwen3-Next's mtp_num_hidden_layers): what MTP speculative decoding
    # proposes with. Neither trained nor traced here, so no parameter count includes them.
    mtp_layers: int = 0
    # The format the published checkpoint's weights are stored in (its config's
    # quantization_config: gpt-oss ships MXFP4 experts, DeepSeek-V3 block-scaled FP8); "" for a
    # 16-bit checkpoint. A served model runs in it unless another precision is asked for.
    checkpoint_format: str = ""
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
        return dict(_roles(self))

    def _count_roles(self) -> tuple[tuple[str, int], ...]:
        if self.role_params:
            return self.role_params
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
        return tuple((role, count) for role, count in roles.items() if count)

    @property
    def total_params(self) -> int:
        """Every parameter held (all experts), biases of the MLP and norms' shifts ignored."""
        return _total(self)

    @property
    def inactive_params(self) -> int:
        """Routed experts' parameters a token does not pass through."""
        if not self.is_moe:
            return 0
        routed = dict(_roles(self)).get("routed_experts", 0)
        return routed * (self.num_experts - self.experts_per_token) // self.num_experts

    @property
    def lookup_params(self) -> int:
        """The input embedding's parameters, which a token only looks up (one row read, no
        multiply); 0 when the embedding is tied to the LM head, whose products use the matrix."""
        return 0 if self.tie_word_embeddings else self.embedding_params

    @property
    def active_params(self) -> int:
        """Parameters one token multiplies with, as DeepSeek and OpenAI count active parameters:
        the routed experts it is sent to only (MoE), and not the input embedding, a lookup."""
        return self.total_params - self.inactive_params - self.lookup_params

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

    def trace_identity(self) -> dict[str, object]:
        """The fields that shape a trace, as stored trace keys name them (new fields only when set)."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _UNTRACED_FIELDS}
        defaults = {f.name: f.default for f in fields(self)}
        return {k: v for k, v in values.items() if k in _TRACE_FIELDS or v != defaults[k]}


# Fields that shape no traced layer: the counts by role, the MTP modules, which are not traced, and
# the checkpoint's storage format (a trace is taken in the precision asked for).
_UNTRACED_FIELDS = frozenset({"role_params", "mtp_layers", "checkpoint_format"})
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


# The planner asks for the counts of one architecture thousands of times: computed once each.
@functools.lru_cache(maxsize=256)
def _roles(arch: DecoderArchitecture) -> tuple[tuple[str, int], ...]:
    return arch._count_roles()


@functools.lru_cache(maxsize=256)
def _total(arch: DecoderArchitecture) -> int:
    return sum(count for _, count in _roles(arch))
