"""Large language models as workloads: architectures from Hugging Face configs, built-in configs."""

from perdollar.workload.llm.architecture import DecoderArchitecture, from_hf_config, load_config_file

__all__ = ["DecoderArchitecture", "from_hf_config", "load_config_file"]
