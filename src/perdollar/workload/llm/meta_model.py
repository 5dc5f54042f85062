"""The transformers model of a decoder config, built on the meta device: shapes only, no weights.

Used to check the analytic parameter count against the real implementation, and (through
:func:`trace_config`) to give the tracer a model it can run on fake tensors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from perdollar.errors import PerdollarError
from perdollar.workload.llm.architecture import DecoderArchitecture

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# Keys of a config.json that describe files or provenance, not the architecture.
_NOT_ARCHITECTURE = (
    "_source",
    "_name_or_path",
    "architectures",
    "transformers_version",
    "torch_dtype",
    "dtype",
)
# Keys with which a config chooses code rather than shape: a kernel from the Hub (an
# ``attn_implementation`` such as "kernels-community/…"), a class from the config's own repository
# (``auto_map``). transformers would fetch or import that code while building; perdollar builds
# only transformers' own classes, with their default kernels.
_CHOOSES_CODE = (
    "attn_implementation",
    "_attn_implementation",
    "_attn_implementation_internal",
    "experts_implementation",
    "_experts_implementation",
    "auto_map",
    "trust_remote_code",
)


def build_meta_model(config: Mapping[str, object], *, num_layers: int | None = None) -> PreTrainedModel:
    """``AutoModelForCausalLM.from_config`` under ``torch.device("meta")`` (``num_layers`` overrides)."""
    import torch

    with torch.device("meta"):
        return build_model(config, num_layers=num_layers)


def build_model(config: Mapping[str, object], *, num_layers: int | None = None) -> PreTrainedModel:
    """``AutoModelForCausalLM.from_config`` on the current default device, randomly initialised."""
    from transformers import AutoConfig, AutoModelForCausalLM

    ignored = {*_NOT_ARCHITECTURE, *_CHOOSES_CODE, "model_type"}
    settings = {k: v for k, v in config.items() if k not in ignored}
    model_type = str(config.get("model_type") or "")
    if num_layers is not None:
        for key in ("num_hidden_layers", "n_layer", "num_layers"):
            if key in settings or key == "num_hidden_layers":
                settings[key] = num_layers
    import torch

    if torch.get_default_device().type == "meta":
        # Built to be traced on fake tensors: experts as one batched product per token and expert
        # slot (static shapes, each token's own experts' work), not the grouped GEMM of a GPU
        # (bf16 only, so an fp32 or CPU trace fails) nor a loop whose shapes depend on the routing.
        settings.setdefault("experts_implementation", "batched_mm")
    try:
        hf_config = AutoConfig.for_model(model_type, **settings)
        return AutoModelForCausalLM.from_config(hf_config)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise PerdollarError(
            f"transformers cannot build a causal language model of type {model_type!r} ({error})",
            "give the config.json of a decoder model transformers knows (llama, mistral, qwen2, gpt2 …)",
        ) from None


def meta_parameter_count(config: Mapping[str, object]) -> int:
    """Parameters of the real implementation (tied weights counted once)."""
    model = build_meta_model(config)
    return sum(p.numel() for p in model.parameters())


_EMBEDDINGS = (
    "embed_tokens",
    "wte",
    "wpe",
    "word_embeddings",
    "embed_in",
    "embed_positions",
    "tok_embeddings",
)
_ROUTERS = re.compile(r"(^|\.)(router|gate|block_sparse_moe\.gate)(\.|$)")


def parameter_role(name: str) -> str:
    """What a parameter of a transformers causal LM does, from its qualified name."""
    parts = name.split(".")
    if any(part in _EMBEDDINGS for part in parts):
        return "embedding"
    if parts[0] in ("lm_head", "embed_out", "output"):
        return "head"
    if any(part.startswith("shared_expert") for part in parts):
        return "shared_experts"
    if "experts" in parts:
        return "routed_experts"
    if _ROUTERS.search(name) and any(
        part in ("mlp", "feed_forward", "block_sparse_moe", "moe") for part in parts
    ):
        return "router"
    if any(part in ("self_attn", "attn", "attention", "self_attention") for part in parts):
        return "attention"
    if any(part in ("mlp", "feed_forward", "ffn", "block_sparse_moe") for part in parts):
        return "dense_mlp"
    return "norms"


def role_census(config: Mapping[str, object]) -> dict[str, int]:
    """Parameters by role of transformers' own model of ``config``, built on the meta device."""
    from perdollar.workload.llm.architecture import language_model_config

    model = build_meta_model(language_model_config(config))
    roles: dict[str, int] = {}
    for name, parameter in model.named_parameters():
        role = parameter_role(name.removeprefix("model."))
        roles[role] = roles.get(role, 0) + int(parameter.numel())
    return roles


def role_census_or_reason(config_json: str) -> dict[str, object]:
    """:func:`role_census` of a canonical config, or why transformers cannot build it (run in a child)."""
    import json

    try:
        return {"roles": role_census(json.loads(config_json))}
    except PerdollarError as error:
        return {"reason": error.problem}
    except Exception as error:  # transformers can fail on any config it does not know
        return {"reason": f"{type(error).__name__}: {str(error)[:200]}"}


def trace_config(arch: DecoderArchitecture, *, num_layers: int) -> dict[str, object]:
    """A config with ``arch``'s per-token work that the tracer can run on fake tensors.

    Gated-MLP models trace as Llama (GQA, optional q/k/v bias), the others as GPT-2. A mixture of
    experts traces as the dense model each token sees (``experts_per_token`` experts' MLP and the
    shared experts), since its routing has data-dependent shapes fake tensors cannot follow; the
    router's small GEMM is left out. Multi-head latent attention traces as multi-head attention of
    its query-key width (its low-rank projections, small beside the experts, are not traced).
    """
    common = {"vocab_size": arch.vocab_size, "tie_word_embeddings": arch.tie_word_embeddings}
    intermediate = arch.intermediate_size * (arch.experts_per_token if arch.is_moe else 1)
    intermediate += arch.shared_intermediate_size
    if arch.gated_mlp:
        return {
            "model_type": "llama",
            "hidden_size": arch.hidden_size,
            "num_hidden_layers": num_layers,
            "num_attention_heads": arch.num_attention_heads,
            "num_key_value_heads": arch.num_key_value_heads,
            "head_dim": arch.head_dim,
            "intermediate_size": intermediate,
            "max_position_embeddings": arch.max_position_embeddings,
            "attention_bias": arch.attention_bias,
            **common,
        }
    return {
        "model_type": "gpt2",
        "n_embd": arch.hidden_size,
        "n_layer": num_layers,
        "n_head": arch.num_attention_heads,
        "n_inner": intermediate,
        "n_positions": arch.max_position_embeddings,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        **common,
    }
