"""Command-line options of a language model's training question, shared by recommend and compare."""

from __future__ import annotations

import typer

SEQ_LEN = typer.Option(None, "--seq-len", min=1, help="Language model: tokens per sequence.")
MICRO_BATCH = typer.Option(
    None, "--micro-batch", min=1, help="Language model: sequences per GPU per micro-step."
)
GLOBAL_BATCH = typer.Option(
    None, "--global-batch", min=1, help="Language model: sequences per optimizer step."
)
PLAN = typer.Option(
    None,
    "--plan",
    help="Language model: fix the plan (ddp, zero1, zero2, fsdp, hsdp, or fsdp+ac,tp2;"
    " tp2-blocking: TP collectives not overlapped; ddp+blocking: gradients reduced after the"
    " backward; fsdp+backward-post: FSDP's BACKWARD_POST).",
)
ACTIVATION_CHECKPOINTING = typer.Option(
    False, "--activation-checkpointing", help="With --plan: recompute activations in the backward."
)
TENSOR_PARALLEL = typer.Option(None, "--tensor-parallel", min=1, help="With --plan: TP size.")
PIPELINE_PARALLEL = typer.Option(
    None, "--pipeline-parallel", min=1, help="With --plan: pipeline stages (across hosts, or inside one)."
)
FINETUNE = typer.Option(None, "--finetune", help="Language model: full, lora or qlora.")
LORA_RANK = typer.Option(None, "--lora-rank", min=1, help="Language model: LoRA rank.")
ATTENTION_KERNEL = typer.Option(
    None,
    "--attention-kernel",
    help="Language model: flash2 (PyTorch SDPA, flash-attn 2; default), native (cuDNN, Transformer "
    "Engine, FlashAttention-3) or unfused (eager attention, scores through memory). On Hopper "
    "FlashAttention-2 reaches about 2/3 of the tensor-core peak.",
)
FRAMEWORK = typer.Option(
    None,
    "--framework",
    help="Language model: the training framework: hf (Trainer + PEFT; default for lora/qlora), deepspeed, "
    "torchtune, unsloth, torchtitan, megatron (default for full training), nemo or composer.",
)
VIRTUAL_STAGES = typer.Option(
    None, "--virtual-stages", min=1, help="Language model: interleaved 1F1B, model chunks per pipeline rank."
)
CONTEXT_PARALLEL = typer.Option(
    None, "--context-parallel", min=1, help="Language model: ranks splitting each sequence (ring attention)."
)
EXPERT_PARALLEL = typer.Option(
    None, "--expert-parallel", min=1, help="Language model (MoE): ranks splitting the routed experts."
)
TOKENS = typer.Option(None, "--tokens", help="Language model: target tokens, e.g. 2e10.")
