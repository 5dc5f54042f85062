"""Large language models as workloads: architectures from Hugging Face configs, built-in configs."""

from perdollar.workload.llm.architecture import DecoderArchitecture, from_hf_config, load_config_file
from perdollar.workload.llm.workload import (
    LLMWorkload,
    llm_reference_names,
    load_llm_workload,
    looks_like_llm,
    near_language_model,
)

__all__ = [
    "DecoderArchitecture",
    "LLMWorkload",
    "from_hf_config",
    "llm_reference_names",
    "load_config_file",
    "load_llm_workload",
    "looks_like_llm",
    "near_language_model",
]
