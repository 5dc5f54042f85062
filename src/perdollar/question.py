"""The question perdollar answers, as plain typed data: what to run, how much, by when, where.

A :class:`Question` is stored with its answer so that ``perdollar history reevaluate`` can ask it
again against today's catalog; every field is a value, never a free-form dictionary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perdollar.goals import Goal, TrainingGoal
from perdollar.vocabulary import Family


@dataclass(frozen=True, slots=True)
class Declared:
    """How a setting is asked for on the command line: declared once, beside the field it fills.

    The CLI builds its options from these (``perdollar.cli.declared``), so every command that
    takes a setting takes it the same way. ``parse`` names how text given on the command line
    becomes the field's value ("count": 2e10 or 250M; "share": 10% or 0.1), where the two differ.
    ``scope`` lets a command take only the settings that mean something to it.
    """

    flag: str
    help: str
    unit: str = ""
    minimum: float | None = None
    parse: str = ""
    scope: str = ""
    short: str = ""  # a one-letter alias, "-k"
    aliases: tuple[str, ...] = ()  # other long names the option answers to, "--batch"

    @property
    def full_help(self) -> str:
        return f"{self.help} [{self.unit}]" if self.unit else self.help


def declared(
    default: Any,
    flag: str,
    help: str,
    *,
    unit: str = "",
    minimum: float | None = None,
    parse: str = "",
    scope: str = "",
    short: str = "",
    aliases: tuple[str, ...] = (),
) -> Any:
    """A dataclass field that carries its command-line declaration."""
    return declared_as(Declared(flag, help, unit, minimum, parse, scope, short, aliases), default)


def declared_as(option: Declared, default: Any = None) -> Any:
    """A dataclass field taken as ``option``, declared once and shared by the settings that take it."""
    return field(default=default, metadata={"option": option})


@dataclass(frozen=True, slots=True)
class SpotSettings:
    """The user's overrides of the spot model (None: perdollar's defaults)."""

    checkpoint_seconds: float | None = declared(
        None,
        "--checkpoint-seconds",
        "Checkpoint write time (default: state size / 250 MB/s + 5 s).",
        unit="s",
        minimum=0,
    )
    restart_minutes: float | None = declared(
        None, "--restart-minutes", "Restart after an interruption (default 10).", unit="min", minimum=0
    )
    # A monthly fraction applied to every spot offer.
    interruption_rate: float | None = declared(
        None,
        "--interruption-rate",
        "Monthly interruption share for every spot offer, e.g. 10%.",
        unit="share a month",
        parse="share",
    )


@dataclass(frozen=True, slots=True)
class DataSettings:
    """Where the training data lives: its size (``--dataset-size 20TB``) and region price the copy."""

    data_region: str | None = declared(
        None,
        "--data-region",
        "Region the dataset is stored in (e.g. us-east-1, or aws:us-east-1); candidates elsewhere pay"
        " egress and the copy time. Give the size as --dataset-size 20TB. Serving a language model:"
        " where its weights are stored, which every instance pulls when it starts.",
        scope="training",
    )
    transfer_gbps: float | None = declared(
        None,
        "--transfer-gbps",
        "Sustained cross-region copy throughput (default 10).",
        unit="Gbit/s",
        minimum=0.001,
        scope="training",
    )
    dataset_bytes: float | None = None  # from --dataset-size when it is written with a byte unit


@dataclass(frozen=True, slots=True)
class BillSettings:
    """How the capacity is bought: for how long, within which quotas, through which service."""

    # None: a committed term is taken to be used for its whole length.
    horizon_months: float | None = declared(
        None,
        "--horizon",
        "Months the capacity is needed. A committed term bills every hour of the term: over a shorter"
        " horizon it still costs the whole term.",
        unit="months",
        minimum=0,
    )
    quotas: str | None = declared(
        None,
        "--quotas",
        "CSV cloud,region,family,gpus (region * = every region): candidates needing more GPUs are excluded.",
    )
    service: str | None = declared(
        None,
        "--service",
        "Rank in a managed service's market at its published prices: sagemaker, vertex or azureml.",
    )


@dataclass(frozen=True, slots=True)
class LanguageModelSettings:
    """A language model's step: sequence length, batches, fine-tuning, and a plan the user fixed."""

    seq_len: int | None = declared(
        None, "--seq-len", "Language model: tokens per sequence.", unit="tokens", minimum=1, scope="training"
    )
    # None: the planner chooses.
    micro_batch: int | None = declared(
        None,
        "--micro-batch",
        "Language model: sequences per GPU per micro-step.",
        unit="sequences",
        minimum=1,
        scope="training",
    )
    global_batch: int | None = declared(
        None,
        "--global-batch",
        "Language model: sequences per optimizer step.",
        unit="sequences",
        minimum=1,
        scope="training",
    )
    finetune: str | None = declared(
        None, "--finetune", "Language model: full, lora or qlora (default: pre-training).", scope="training"
    )
    lora_rank: int | None = declared(
        None, "--lora-rank", "Language model: LoRA rank (default 16).", minimum=1, scope="training"
    )
    # A plan token ("fsdp+ac,tp2"); None: the planner searches.
    plan: str | None = declared(
        None,
        "--plan",
        "Language model: fix the plan (ddp, zero1, zero2, fsdp, hsdp, or a token such as fsdp+ac,tp2;"
        " tp2-blocking: TP collectives not overlapped; ddp+blocking: gradients reduced after the"
        " backward; fsdp+backward-post: FSDP's BACKWARD_POST; ddp+optimizer-in-backward: each"
        " parameter stepped as its gradient completes, as torchtune's optimizer_in_bwd).",
        scope="training",
    )
    attention_kernel: str | None = declared(
        None,
        "--attention-kernel",
        "Language model: flash2 (PyTorch SDPA, flash-attn 2; default), native (cuDNN, Transformer "
        "Engine, FlashAttention-3) or unfused (eager attention, scores through memory). On Hopper "
        "FlashAttention-2 reaches about 2/3 of the tensor-core peak.",
        scope="training",
    )
    # None: the fine-tuning mode's default (hf for lora/qlora, megatron for full training).
    framework: str | None = declared(
        None,
        "--framework",
        "Language model: the training framework: hf (Trainer + PEFT; default for lora/qlora), deepspeed,"
        " torchtune, unsloth, torchtitan, megatron (default for full training), nemo or composer.",
        scope="training",
    )
    # None: the framework's own default (torchtitan compiles; hf, deepspeed, torchtune do not).
    compile: bool | None = declared(
        None,
        "--compile/--no-compile",
        "Language model: run the training step under torch.compile (fuses PEFT's adapter chains, the"
        " norms and activations and the loss; no per-operator host time). Default: the framework's"
        " own (on for torchtitan; Megatron, NeMo and Unsloth use their own fused kernels).",
        scope="training",
    )
    # None: AdamW, for every mode (see predict.llm.optimizers).
    optimizer: str | None = declared(
        None,
        "--optimizer",
        "Language model: the optimizer: adamw (default), adamw-8bit (bitsandbytes: 8-bit states),"
        " paged-adamw-8bit, paged-adamw (states may spill to host memory instead of running out) or"
        " sgd (with momentum).",
        scope="training",
    )
    # Serving: tokens in and out of a request (its latency objectives are the question's goal).
    input_tokens: int | None = declared(
        None,
        "--input-tokens",
        "Language model serving: prompt tokens per request (default 1000).",
        unit="tokens",
        minimum=1,
        scope="serving",
    )
    output_tokens: int | None = declared(
        None,
        "--output-tokens",
        "Language model serving: tokens generated per request (default 300).",
        unit="tokens",
        minimum=1,
        scope="serving",
    )
    # None: vLLM, the engine most teams run.
    engine: str | None = declared(
        None,
        "--engine",
        "Language model serving: the serving engine (vllm, sglang, tensorrt-llm, tgi, llama.cpp, hf; any:"
        " the best for each deployment; compare takes a comma list and shows each engine side by side)."
        " Default vllm, the engine most teams run.",
        scope="serving",
        parse="engines",
    )
    # None: the engine's default (vLLM, SGLang, TGI: the model's 16-bit dtype whatever the weights).
    kv_precision: str | None = declared(
        None,
        "--kv-precision",
        "Language model serving: the KV cache's precision (fp16, bf16, fp8); default the engine's. fp8"
        " halves the cache, so about twice the sequences fit.",
        scope="serving",
    )
    # Serving-engine features (perdollar.predict.llm_serving.features); None: off.
    prefix_share: float | None = declared(
        None,
        "--prefix-share",
        "Language model serving: share of every prompt found in the prefix cache (0.5: half of it); its"
        " prefill is skipped and its KV blocks are held once.",
        unit="share",
        minimum=0,
        scope="serving",
    )
    speculative: str | None = declared(
        None,
        "--speculative",
        "Language model serving: speculative decoding by a draft model (draft-model) or the model's"
        " multi-token-prediction head (mtp).",
        scope="serving",
    )
    acceptance: float | None = declared(
        None,
        "--acceptance",
        "With --speculative: chance each proposed token is accepted (default 0.7).",
        unit="share",
        minimum=0,
        scope="serving",
    )
    speculative_tokens: int | None = declared(
        None,
        "--speculative-tokens",
        "With --speculative: tokens proposed a step (default 3 for draft-model, 1 for mtp).",
        unit="tokens",
        minimum=1,
        scope="serving",
    )
    disaggregate: str | None = declared(
        None,
        "--disaggregate",
        "Language model serving: prefill and decode on separate replicas, xPyD (1P3D: one prefill"
        " replica for three decode replicas); the KV cache crosses the GPU link or the network.",
        scope="serving",
    )


@dataclass(frozen=True, slots=True)
class NearSettings:
    """Where the users of a deployment are: only regions within a round trip of them may serve."""

    places: tuple[str, ...] = declared(
        (),
        "--near",
        "Serving: keep only regions within --near-rtt-ms of this region or city (repeatable, or a comma"
        " list): us-east-1, us-central1, eastus, aws:eu-west-1, frankfurt.",
        scope="serving",
    )
    # None: DEFAULT_NEAR_RTT_MS (perdollar.catalog.region_places).
    rtt_ms: float | None = declared(
        None,
        "--near-rtt-ms",
        "With --near: the longest estimated round trip from a user's place to a kept region (default 30).",
        unit="ms",
        scope="serving",
    )


@dataclass(frozen=True, slots=True)
class Question:
    """Everything that defines one question, so that it can be stored and asked again."""

    workload_name: str  # as it loads from anywhere: a workload file by its absolute path
    workload_fingerprint: str = ""
    # The name the workload gives itself (a file's Workload(name=...), a built-in's own name for an
    # alias): what the history lists it under, as it lists the workload's measurements.
    workload_label: str = ""
    # Decided once, where the question is built (perdollar.ask.questions.decided); None until then.
    family: Family | None = None
    # What is asked for: a training run's target, a deployment's rate and latencies, a fleet's day.
    goal: Goal = field(default_factory=TrainingGoal)
    market: str = "any"
    clouds: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    max_nodes: int = 1
    # The most accelerator chips a candidate may use, GPUs and TPU chips counted alike (None: no cap).
    max_accelerators: int | None = None
    # The software stacks a candidate's chips may run (the catalog's names: cuda, xla …); (): any.
    stacks: tuple[str, ...] = ()
    batch_size: int | None = None
    precision: str | None = None
    spot: SpotSettings = field(default_factory=SpotSettings)
    top: int = 0  # feasible candidates to keep beyond the default
    # compare: the configurations asked about, as the user wrote them; empty for a ranking.
    configurations: tuple[str, ...] = ()
    language_model: LanguageModelSettings | None = None  # set when the workload is a language model
    data: DataSettings = field(default_factory=DataSettings)
    bill: BillSettings = field(default_factory=BillSettings)
    near: NearSettings = field(default_factory=NearSettings)  # serving: the users' places

    def json_form(self) -> dict[str, Any]:
        """The question as its JSON has always been written (see :mod:`perdollar.question_json`)."""
        from perdollar.question_json import question_form

        return question_form(self)
