"""The reading of a config checked against transformers' own model of it.

perdollar reads the families below itself (:func:`architecture.from_hf_config`); the test table of
published models checks that reading role by role against the model ``transformers`` builds on the
meta device. Every other family, and any config with a key that looks like it shapes the model but
that perdollar does not read, is built by ``transformers`` once, in a child process (building
imports torch, which perdollar's own process does not), and its parameter counts by role are kept
in the cache folder per config and library version, so a second ``recommend`` of it starts no child. Where the
two readings differ, transformers' counts are used and a warning names the roles; where
transformers has no class for the family, perdollar's own description is used and a warning says so.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Mapping

from perdollar import cache
from perdollar.errors import PerdollarWarning
from perdollar.files import installed_version
from perdollar.workload.llm.architecture import DecoderArchitecture, language_model_config
from perdollar.workload.llm.config_values import unread_shape_keys

# Families whose reading tests/test_llm_architectures.py checks against transformers' model.
VERIFIED_TYPES = frozenset(
    {
        "llama",
        "llama4_text",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "deepseek_v2",
        "deepseek_v3",
        "gpt_oss",
        "gemma2",
        "gemma3_text",
        "phi3",
        "olmo2",
        "gpt2",
        "mpt",
    }
)
_AGREEMENT = 0.01  # transformers' total within 1% of perdollar's: perdollar's reading stands
CENSUS_TIMEOUT_S = 180.0


KIND = "llm-architectures"
_CODE = ("workload/llm",)  # the census builds the model through this code


def census_key(config_json: str) -> str:
    payload = {"config": config_json, "transformers": installed_version("transformers"), "schema": 1}
    return cache.entry_key(payload, _CODE)


def _load(key: str) -> Mapping[str, object] | None:
    document = cache.read_json(cache.entry_path(KIND, key))
    return document if isinstance(document, dict) and ("roles" in document or "reason" in document) else None


def _save(key: str, document: Mapping[str, object]) -> None:
    cache.write_json(cache.entry_path(KIND, key), document)


def census(config_json: str) -> Mapping[str, object]:
    """``{"roles": {role: count}}`` of transformers' model of the config, or ``{"reason": why not}``."""
    key = census_key(config_json)
    stored = _load(key)
    if stored is not None:
        return stored
    from perdollar.sandbox import UserCodeFailed, in_sandbox, run_isolated

    target = "perdollar.workload.llm.meta_model:role_census_or_reason"
    try:
        if in_sandbox():
            from perdollar.workload.llm.meta_model import role_census_or_reason

            document = role_census_or_reason(config_json)
        else:
            document = run_isolated(
                target,
                {"config_json": config_json},
                what="building the model with transformers",
                timeout_s=CENSUS_TIMEOUT_S,
            )
    except UserCodeFailed as failure:  # out of memory, a timeout: not kept, the next run tries again
        return {"reason": failure.reason}
    _save(key, document)
    return document


def checked(arch: DecoderArchitecture, config: Mapping[str, object]) -> DecoderArchitecture:
    """``arch`` as read, or with transformers' counts by role where they differ; warns where unsure."""
    text = language_model_config(config)
    unread = unread_shape_keys(text)
    if arch.model_type in VERIFIED_TYPES and not unread:
        return arch
    canonical = json.dumps({k: v for k, v in config.items() if not k.startswith("_")}, sort_keys=True)
    document = census(canonical)
    roles = document.get("roles")
    if not isinstance(roles, dict) or not roles:
        why = document.get("reason") or "no parameters"
        keys = f"; keys it does not read: {', '.join(unread)}" if unread else ""
        version = installed_version("transformers")
        warnings.warn(
            PerdollarWarning(
                f"transformers {version} cannot build model_type {arch.model_type!r} "
                f"({why}); perdollar reads it with its own description of a "
                f"{'gated' if arch.gated_mlp else 'plain'}-MLP decoder{keys} — check the parameter "
                f"count ({arch.total_params / 1e9:.2f}B)"
            ),
            stacklevel=2,
        )
        return arch
    counts = {str(role): int(count) for role, count in roles.items()}
    ours = arch.params_by_role()
    total = sum(counts.values())
    if abs(arch.total_params - total) <= _AGREEMENT * total:
        if unread:
            warnings.warn(
                PerdollarWarning(
                    f"perdollar does not read the config keys {', '.join(unread)}; transformers' "
                    f"{arch.model_type} model of this config has the parameters perdollar counts "
                    f"({total:,}), so they are taken to change no shape"
                ),
                stacklevel=2,
            )
        return arch
    differ = sorted(role for role in set(ours) | set(counts) if ours.get(role, 0) != counts.get(role, 0))
    warnings.warn(
        PerdollarWarning(
            f"perdollar reads {arch.model_type!r} as {arch.total_params / 1e9:.2f}B parameters, transformers "
            f"builds {total / 1e9:.2f}B (roles {', '.join(differ)}"
            + (f"; keys perdollar does not read: {', '.join(unread)}" if unread else "")
            + "); transformers' counts are used"
        ),
        stacklevel=2,
    )
    return dataclasses.replace(arch, role_params=tuple(sorted(counts.items())))
