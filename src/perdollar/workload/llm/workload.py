"""A language-model workload: an architecture, a sequence length and batch sizes, a precision and a
fine-tuning mode. Loaded from a built-in reference name or a Hugging Face ``config.json``."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from perdollar.errors import PerdollarError
from perdollar.jsonable import JsonObject
from perdollar.workload.llm.architecture import DecoderArchitecture, from_hf_config, load_config_file
from perdollar.workload.llm.census import checked

CONFIG_DIR = Path(__file__).parent / "configs"
DEFAULT_SEQ_LEN = 2048
DEFAULT_GLOBAL_BATCH = 256  # sequences per optimizer step (half a million tokens at 2048)
# Model types that are not decoder-only language models.
_NOT_DECODERS = frozenset(
    {
        "bert",
        "roberta",
        "distilbert",
        "albert",
        "electra",
        "deberta",
        "deberta-v2",
        "t5",
        "mt5",
        "bart",
        "vit",
        "clip",
        "whisper",
        "wav2vec2",
        "xlm-roberta",
        "mpnet",
        "swin",
        "convnext",
        "resnet",
    }
)


def llm_reference_names() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def near_language_model(name: str) -> str | None:
    """The built-in language model a mistyped name most likely meant (``lama-3.1-8b``), or None."""
    import difflib

    key = name.strip().lower().replace("_", "-")
    close = difflib.get_close_matches(key, llm_reference_names(), n=1, cutoff=0.8)
    return close[0] if close else None


@dataclass(frozen=True, slots=True)
class LLMWorkload:
    """What to train (or serve): the architecture and the settings that shape the step."""

    architecture: DecoderArchitecture
    name: str
    seq_len: int = DEFAULT_SEQ_LEN
    micro_batch: int | None = None  # sequences per GPU per micro-step; None: the planner chooses
    global_batch: int = DEFAULT_GLOBAL_BATCH  # sequences per optimizer step
    precision: str = "amp-bf16"
    finetune: str = "full"  # full | lora | qlora
    lora_rank: int = 16
    kind: str = "train"  # train | inference
    attention_kernel: str = "flash2"  # see ATTENTION_KERNELS
    framework: str | None = None  # the training framework (predict.llm.frameworks); None: the mode's default
    optimizer: str | None = None  # one of TRAINING_OPTIMIZERS (predict.llm.optimizers); None: adamw
    config_json: str = ""  # the config it came from (canonical JSON), for the fingerprint and meta builds

    sample_unit = "tokens"

    @property
    def config(self) -> JsonObject:
        return json.loads(self.config_json) if self.config_json else {}

    @property
    def fingerprint(self) -> str:
        payload = {
            "config": self.config_json or repr(self.architecture),
            "seq_len": self.seq_len,
            "micro_batch": self.micro_batch,
            "global_batch": self.global_batch,
            "precision": self.precision,
            "finetune": self.finetune,
            "lora_rank": self.lora_rank if self.finetune != "full" else None,
            "kind": self.kind,
        }
        if self.attention_kernel != "flash2":  # the default leaves earlier fingerprints as they were
            payload["attention_kernel"] = self.attention_kernel
        if self.framework:  # likewise: no framework named, the fingerprint is as before
            payload["framework"] = self.framework
        if self.optimizer:  # likewise
            payload["optimizer"] = self.optimizer
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


_SERVED_SUFFIX = re.compile(r"-(instruct|chat|hf|it|base)$|-v\d+(\.\d+)*$")


def reference_for_served_name(served: str) -> str | None:
    """The built-in model a server's name stands for (``meta-llama/Llama-3.1-8B-Instruct`` →
    ``llama-3.1-8b``), or None when it names none of them."""
    name = served.strip().rsplit("/", 1)[-1].lower().replace("_", "-").replace("meta-llama-", "llama-")
    while True:
        shorter = _SERVED_SUFFIX.sub("", name)
        if shorter == name:
            break
        name = shorter
    return name if name in llm_reference_names() else None


_GLUED_VERSION = re.compile(r"^llama(\d)")


def builtin_llm_name(spec: str) -> str | None:
    """The built-in language model ``spec`` names, however cased (``Llama3-8B`` → ``llama-3-8b``)."""
    name = _GLUED_VERSION.sub(r"llama-\1", spec.strip().lower().replace("_", "-"))
    return name if name in llm_reference_names() else None


def looks_like_llm(spec: str) -> bool:
    """Whether ``spec`` names a built-in LLM or a config.json (file or folder holding one)."""
    if builtin_llm_name(spec) is not None:
        return True
    path = Path(spec)
    try:
        return spec.endswith(".json") or (path.is_dir() and (path / "config.json").is_file())
    except OSError:  # a name the file system refuses to look up (too long, say) is no config
        return False


def _config_for(spec: str) -> tuple[JsonObject, str]:
    builtin = builtin_llm_name(spec)
    if builtin is not None and not spec.endswith(".json"):
        return load_config_file(CONFIG_DIR / f"{builtin}.json"), builtin
    path = Path(spec)
    try:
        exists = path.exists()
    except OSError:
        exists = False
    if spec.endswith(".json") or exists:
        return load_config_file(path), (path.parent.name if path.name == "config.json" else path.stem) or spec
    close = difflib.get_close_matches(spec, llm_reference_names(), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"built-in: {', '.join(llm_reference_names())}"
    raise PerdollarError(f"unknown language model {spec!r}", f"{hint} (or give a config.json path)")


# fp8: the linear layers' matrix products in FP8 with one scale per tensor (Transformer Engine,
# torchao's tensorwise recipe), everything else under bf16 autocast with fp32 master weights, as
# those libraries train. fp8-rowwise: torchao's rowwise recipe, a scale per row of each operand.
TRAINING_PRECISIONS = ("amp-bf16", "amp-fp16", "bf16", "fp16", "fp32", "tf32", "fp8", "fp8-rowwise")
# Which attention kernels the training step runs. flash2: FlashAttention-2's (PyTorch SDPA's flash
# backend, flash-attn 2, Hugging Face): warp-level MMA instructions on every GPU. native: kernels
# written for the GPU's newest matrix instructions (cuDNN fused attention as Transformer Engine,
# NeMo and Megatron-Core run it; FlashAttention-3). They differ on Hopper. unfused: the score
# matrix through memory (Hugging Face's eager attention, Megatron-LM before FlashAttention).
ATTENTION_KERNELS = ("flash2", "native", "unfused")
# Which optimizer steps the trained weights (their bytes: perdollar.predict.llm.optimizers).
TRAINING_OPTIMIZERS = ("adamw", "adamw-8bit", "paged-adamw-8bit", "paged-adamw", "sgd")


def load_llm_workload(
    spec: str,
    *,
    seq_len: int | None = None,
    micro_batch: int | None = None,
    global_batch: int | None = None,
    precision: str | None = None,
    finetune: str | None = None,
    lora_rank: int | None = None,
    kind: str = "train",
    attention_kernel: str | None = None,
    framework: str | None = None,
    optimizer: str | None = None,
) -> LLMWorkload:
    """An LLM workload from a reference name or a config.json path, with one-line errors."""
    config, name = _config_for(spec)
    model_type = str(config.get("model_type") or "").lower()
    if model_type in _NOT_DECODERS or config.get("is_encoder_decoder"):
        raise PerdollarError(
            f"{spec!r} is a {model_type or 'encoder-decoder'} config, not a decoder-only language model",
            "give the config.json of a decoder model (llama, mistral, qwen2, gpt2, gpt_neox, falcon …)",
        )
    arch = checked(from_hf_config(config, name=name), config)
    seq = seq_len or min(DEFAULT_SEQ_LEN, arch.max_position_embeddings)
    checks = [("--seq-len", seq), ("--micro-batch", micro_batch), ("--global-batch", global_batch)]
    checks.append(("--lora-rank", lora_rank))
    for option, value in checks:
        if value is not None and value < 1:
            raise PerdollarError(f"{option} must be at least 1 (got {value})", f"pass {option} 1 or more")
    mode = finetune or "full"
    if mode not in ("full", "lora", "qlora"):
        raise PerdollarError(f"unknown fine-tuning mode {mode!r}", "use --finetune full, lora or qlora")
    kernel = attention_kernel or "flash2"
    if kernel not in ATTENTION_KERNELS:
        raise PerdollarError(
            f"unknown attention kernel {kernel!r}",
            "use --attention-kernel flash2 (PyTorch SDPA), native (cuDNN, TE) or unfused (eager)",
        )
    if optimizer and optimizer.lower() not in TRAINING_OPTIMIZERS:
        known = ", ".join(TRAINING_OPTIMIZERS)
        raise PerdollarError(f"unknown optimizer {optimizer!r}", f"use --optimizer {known}")
    chosen = precision or "amp-bf16"
    if chosen not in TRAINING_PRECISIONS:
        raise PerdollarError(f"unknown precision {chosen!r}", f"use {', '.join(TRAINING_PRECISIONS)}")
    return LLMWorkload(
        architecture=arch,
        name=name,
        seq_len=seq,
        micro_batch=micro_batch,
        global_batch=global_batch or DEFAULT_GLOBAL_BATCH,
        precision=chosen,
        finetune=mode,
        lora_rank=lora_rank or 16,
        kind=kind,
        attention_kernel=kernel,
        framework=framework.lower() if framework else None,
        optimizer=optimizer.lower() if optimizer else None,
        config_json=json.dumps({k: v for k, v in config.items() if not k.startswith("_")}, sort_keys=True),
    )
