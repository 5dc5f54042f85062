"""Training frameworks as the step model sees them: what each one fuses and how it runs LoRA.

The same plan runs at different speeds and in different memory under different frameworks: a
framework that runs the model's eager PyTorch code (Hugging Face's Trainer, DeepSpeed around a
Hugging Face model, torchtune without ``compile``) launches one kernel per operator, keeps every
tensor autograd saves and pays Python's dispatch for each of them; one with hand-written or
compiled kernels (Megatron-Core with Transformer Engine, torchtitan, LLM Foundry, Unsloth's Triton
kernels) fuses the elementwise chains and keeps less. LoRA differs the most:

- ``modules``: PEFT's ``LoraLayer`` (and torchtune's ``LoRALinear``) runs beside every adapted
  linear layer its own dropout (a copy of the input and a mask), casts the input to the adapters'
  precision (PEFT keeps adapters in float32 under autocast by default, ``autocast_adapter_dtype``)
  and back, two thin GEMMs, a scaling and an addition: about ten kernels forward and fifteen
  backward per adapted matrix, each moving the layer's whole input;
- ``fused``: Unsloth's ``LoRA_QKV``/``LoRA_MLP``/``LoRA_W`` autograd functions fold the adapter
  products into the base matrix product (``addmm``), with bf16 adapters and no dropout, saving
  each distinct input once.

The loss: Hugging Face's ``ForCausalLMLoss`` upcasts the whole logits tensor to float32 and the
backward starts from float32 gradients of it (``upcast``); torchtune's ``CEWithChunkedOutputLoss``
upcasts a chunk at a time (``chunked``), Unsloth's Triton cross-entropy keeps no float32 copy
(``kernel``), Megatron's vocabulary-parallel cross-entropy is what the fitted model assumes
(``fused``).

Compiling (``torch.compile``: TorchDynamo captures the step, AOTAutograd splits forward and
backward, Inductor generates the kernels) turns an eager framework's step into fused kernels:
Inductor fuses pointwise operators into one kernel and a reduction with the pointwise operators
that feed it and read it (PyTorch's "torch.compiler" and TorchInductor documentation, 2.5–2.11),
while matrix products and attention stay library kernels. So PEFT's casts, dropout, scaling and
addition around each adapter fuse with the model's own chains (norms, activations, rotary
embedding, residual additions), and the upcast cross-entropy becomes reductions over the bf16
logits (see :mod:`perdollar.predict.llm.compiled`). A compiled step replays Inductor's generated
wrapper: no per-operator Python dispatch. Frameworks with hand-written kernels (Megatron-Core,
NeMo, Unsloth, LLM Foundry) are fused already; torchtitan compiles by default.

QLoRA's NF4 weights are dequantised to a bf16 copy in every forward, backward and recompute of
each adapted matrix (bitsandbytes' ``MatMul4Bit``, torchao's ``NF4Tensor``, Unsloth's
``fast_dequantize`` alike): the bytes are the same whichever kernel does it.

Each trait is read from the framework's own code or documentation (the ``source`` of each
record). One number is fitted: :data:`HOST_SECONDS_PER_OPERATOR`, the host time an eager
framework spends per operator of a step (dispatch, autograd bookkeeping, launch).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from perdollar.errors import PerdollarError

LORA_KERNELS = ("modules", "fused", "none")
# Which matrices a framework's LoRA adapts unless told: every attention and MLP matrix, or only the
# attention's query-key-value projection (NeMo 1.x's default).
LORA_TARGETS = ("all", "attention-qkv")
LOSS_KERNELS = ("upcast", "chunked", "kernel", "fused", "compiled")
# The ways a plan splits one model over GPUs beside data parallelism (DDP, ZeRO, FSDP), by the plan's
# degree each is written in.
MODEL_PARALLEL = {"tensor": "tensor_parallel", "pipeline": "pipeline_parallel",
                  "context": "context_parallel", "expert": "expert_parallel"}  # fmt: skip
# The accelerator stacks the frameworks run on: PyTorch on CUDA and ROCm. Trainium, TPU and Gaudi
# train under their own stacks (perdollar.predict.accelerator_stacks), none of these.
FRAMEWORK_STACKS = frozenset({"cuda", "rocm"})
# Bytes per token and vocabulary entry the loss holds at the backward's start beyond the float32
# log-probabilities the traced model keeps (what the fit assumes, and Megatron's fused loss keeps):
# ``upcast`` also holds the bf16 logits the model returns (2) and the float32 gradients of the
# log-probabilities and of the upcast logits (4 + 4); ``chunked`` (torchtune) the bf16 logits only,
# each chunk's gradient being made and freed in turn; ``kernel`` (Unsloth's Triton cross-entropy)
# keeps the bf16 logits and a log-sum-exp per token instead of any float32 copy (2 − 4).
# ``compiled`` (the upcast loss under Inductor) keeps the bf16 logits for its backward, which
# writes the float32 one-hot gradient that ``nll_loss_backward``'s decomposition scatters into
# zeros (a scatter ends a fusion) and the bf16 gradient: 2 + 4 + 2 against the fit's 4.
LOSS_EXTRA_BYTES_PER_LOGIT = {"upcast": 10.0, "chunked": 2.0, "kernel": -2.0, "fused": 0.0, "compiled": 4.0}
# Host seconds per operator call of an eager step (forward and backward, autograd included). Fitted
# on the one measured step bound by its host: PEFT LoRA of Llama-3.2-1B at one sequence of 512
# tokens, 75 ms on an H200 host and 91 ms on an H100 host (benchmarks/gpu_lora_steps_*.csv) for
# 3,472 traced operator calls (the untraced views and module hooks ride on them); the midpoint.
HOST_SECONDS_PER_OPERATOR = 24e-6


@dataclass(frozen=True, slots=True)
class Framework:
    """What a training framework does to a step, each trait as its source states it."""

    name: str
    title: str
    fused_chains: bool  # elementwise chains as fused kernels (True) or one kernel per operator
    lora: str  # modules | fused | none (no LoRA of its own: runs PEFT's modules)
    adapter_bytes: float  # bytes of an adapter weight and of its products
    adapter_dropout: bool  # a dropout (copy and mask) of each adapted layer's input
    loss: str  # upcast | chunked | kernel | fused
    eager_host: bool  # Python dispatches every operator: the host bounds small steps
    source: str
    fused_projections: bool = False  # q, k, v one matrix and gate, up one: one adapter each
    # Under FSDP, LoRA's frozen base shares each layer's flat parameter with its adapters and gets a
    # gradient too (FSDP1 with use_orig_params=True, as Accelerate wraps a PEFT model by layer).
    fsdp_frozen_gradients: bool = False
    # The step runs under torch.compile (torchtitan by default; any eager framework with --compile).
    compiled: bool = False
    lora_targets: str = "all"  # one of LORA_TARGETS: the matrices its LoRA adapts by default
    # The kinds of MODEL_PARALLEL it runs (every one unless its source says fewer).
    model_parallel: frozenset[str] = frozenset(MODEL_PARALLEL)
    stacks: frozenset[str] = FRAMEWORK_STACKS  # the accelerator software stacks it runs on
    # Under activation checkpointing each layer's saved input is copied to host memory and back for
    # its recompute (Unsloth's use_gradient_checkpointing="unsloth"): only the layer in flight stays.
    offloads_checkpoints: bool = False

    @property
    def compiles_eager_code(self) -> bool:
        """Inductor fuses this framework's eager step (its chains are the eager trace's, not
        hand-written kernels): the chains, adapters and loss move what the fused kernels move."""
        return self.compiled and not self.fused_chains

    def __post_init__(self) -> None:
        known = (self.lora in LORA_KERNELS and self.loss in LOSS_KERNELS and self.lora_targets in LORA_TARGETS
                 and self.model_parallel <= set(MODEL_PARALLEL))  # fmt: skip
        if not known:
            raise PerdollarError(f"framework {self.name!r} has an unknown trait", "fix the table")


# One record a line of traits, as each source groups them.
# fmt: off
FRAMEWORKS: dict[str, Framework] = {
    framework.name: framework
    for framework in (
        Framework(
            "hf", "Hugging Face Trainer + PEFT", fused_chains=False, lora="modules", adapter_bytes=4.0,
            adapter_dropout=True, loss="upcast", eager_host=True,
            source="huggingface/peft tuners/lora/layer.py (LoraLayer, autocast_adapter_dtype=True) and "
            "transformers loss/loss_utils.py ForCausalLMLoss (logits.float()), 2025; Trainer runs eager "
            "unless torch_compile=True; Accelerate's FSDP wraps by decoder layer with use_orig_params, and "
            "PyTorch's FSDP documentation says mixing frozen and trained parameters in one flat parameter "
            "costs the gradient memory of not freezing them",
            fsdp_frozen_gradients=True,
        ),
        Framework(
            "deepspeed", "DeepSpeed ZeRO around a Hugging Face model (PEFT for LoRA)", fused_chains=False,
            lora="modules", adapter_bytes=4.0, adapter_dropout=True, loss="upcast", eager_host=True,
            source="DeepSpeed runs the model's own eager code; LoRA through PEFT as hf",
        ),
        Framework(
            "torchtune", "torchtune recipes", fused_chains=False, lora="modules", adapter_bytes=2.0,
            adapter_dropout=False, loss="chunked", eager_host=True,
            source="pytorch/torchtune modules/peft/lora.py (LoRALinear, lora_dropout 0.0 in the shipped "
            "configs, bf16 training) and modules/loss (CEWithChunkedOutputLoss), compile: False by default",
        ),
        Framework(
            "unsloth", "Unsloth", fused_chains=True, lora="fused", adapter_bytes=2.0, adapter_dropout=False,
            loss="kernel", eager_host=False,
            source="unslothai/unsloth kernels/fast_lora.py (LoRA_MLP, LoRA_QKV, LoRA_W with dropout 0), "
            "kernels/cross_entropy_loss.py, rms_layernorm.py, rope_embedding.py, swiglu.py (Triton); "
            "several GPUs only through Accelerate or DeepSpeed's data parallelism (DDP, FSDP, ZeRO), "
            "no tensor, pipeline, context or expert parallelism (Unsloth's multi-GPU documentation); "
            "use_gradient_checkpointing=\"unsloth\", its documented default, offloads each checkpointed "
            "layer input to host memory (Unsloth_Offloaded_Gradient_Checkpointer, hidden_states.to(\"cpu\"))",
            model_parallel=frozenset(), offloads_checkpoints=True,
        ),
        Framework(
            "torchtitan", "torchtitan", fused_chains=True, lora="none", adapter_bytes=4.0,
            adapter_dropout=True, loss="upcast", eager_host=False, compiled=True,
            source="pytorch/torchtitan: FSDP2 with torch.compile per block; pre-training, no LoRA",
        ),
        Framework(
            "megatron", "Megatron-Core with Transformer Engine", fused_chains=True, lora="none",
            adapter_bytes=4.0, adapter_dropout=True, loss="fused", eager_host=False,
            source="NVIDIA/Megatron-LM: fused bias-activation, fused RMSNorm and RoPE kernels, "
            "vocab-parallel cross-entropy, CUDA graphs optional",
        ),
        Framework(
            "nemo", "NeMo (Megatron-Core)", fused_chains=True, lora="modules", adapter_bytes=2.0,
            adapter_dropout=False, loss="fused", eager_host=False,
            source="NVIDIA NeMo ParallelLinearAdapter (LoRA, dropout 0.0 by default, model precision) "
            "on Megatron-Core's fused kernels and its fused linear_qkv and linear_fc1 projections; "
            "megatron_gpt_finetuning_config.yaml (NeMo 1.x): lora_tuning.target_modules ['attention_qkv'], "
            "adapter_dim 32",
            fused_projections=True, lora_targets="attention-qkv",
        ),
        Framework(
            "composer", "MosaicML Composer / LLM Foundry", fused_chains=True, lora="modules",
            adapter_bytes=4.0, adapter_dropout=True, loss="fused", eager_host=False,
            source="mosaicml/llm-foundry: FlashAttention, fused cross-entropy; LoRA through PEFT",
        ),
    )
}
# fmt: on
# Who runs each mode by default: PEFT is what LoRA and QLoRA most often run under; full training
# defaults to the fused-kernel stacks the published multi-GPU tables (and the fit) come from.
DEFAULT_FRAMEWORK = {"full": "megatron", "lora": "hf", "qlora": "hf"}


COMPILE_SUFFIXES = {"+compile": True, "+eager": False}
# The loss a compiled step runs: Inductor fuses the upcast cross-entropy; the others are kernels already.
FUSED_BY_COMPILE = {"upcast": "compiled"}


def parallelism_problem(framework: Framework, degrees: dict[str, int]) -> str:
    """Why ``framework`` cannot run a plan of these degrees ('' when it can): the first kind of
    model parallelism at a degree above 1 that it does not run, and who does."""
    for kind, field_name in MODEL_PARALLEL.items():
        degree = degrees.get(field_name, 1)
        if degree > 1 and kind not in framework.model_parallel:
            runs = ", ".join(n for n, f in FRAMEWORKS.items() if kind in f.model_parallel)
            return (
                f"{framework.title} runs no {kind} parallelism (not {kind} parallel {degree}); "
                f"frameworks that do: {runs}"
            )
    return ""


def framework_choice(name: str | None, compile: bool | None) -> str | None:
    """The framework as plans and workloads carry it: its name and, when asked for, ``+compile``
    or ``+eager`` ("hf+compile"; "+compile" alone: the mode's default framework, compiled)."""
    if compile is None:
        return name
    return f"{name or ''}{'+compile' if compile else '+eager'}"


def framework_for(name: str | None, finetune: str) -> Framework:
    """The named framework (``NAME[+compile|+eager]``), or the mode's default; one-line error for an
    unknown name."""
    chosen, compile = (name or "").lower(), None
    for suffix, value in COMPILE_SUFFIXES.items():
        if chosen.endswith(suffix):
            chosen, compile = chosen[: -len(suffix)], value
    chosen = chosen or DEFAULT_FRAMEWORK.get(finetune, "megatron")
    if chosen not in FRAMEWORKS:
        raise PerdollarError(f"unknown training framework {name!r}", f"use one of {', '.join(FRAMEWORKS)}")
    return with_compile(FRAMEWORKS[chosen], compile)


def with_compile(framework: Framework, compile: bool | None) -> Framework:
    """``framework`` compiled or run eagerly, as asked (None: its own default).

    Compiling an eager framework fuses its chains and drops its per-operator host time; PEFT's
    upcast loss becomes Inductor's fused cross-entropy. Turning off torchtitan's compile leaves the
    model's eager code. Hand-fused frameworks are as they are either way."""
    if compile is None or compile == framework.compiled:
        return framework
    if compile and not framework.fused_chains:
        return replace(
            framework, name=f"{framework.name}+compile", title=f"{framework.title}, compiled (torch.compile)",
            compiled=True, eager_host=False, loss=FUSED_BY_COMPILE.get(framework.loss, framework.loss),
        )  # fmt: skip
    if not compile and framework.compiled:
        return replace(
            framework, name=f"{framework.name}+eager", title=f"{framework.title}, eager (no torch.compile)",
            compiled=False, fused_chains=False, eager_host=True,
        )  # fmt: skip
    return framework
