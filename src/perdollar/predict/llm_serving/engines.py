"""The serving engines perdollar predicts, declared in one place: their host costs, fitted
efficiencies and the defaults a user gets without tuning.

An engine's kernels reach a share of the GPU's bandwidth and tensor rate; beside them it spends
host time on every step (scheduling, sampling, launching or replaying a CUDA graph), once a step
whatever the model's depth. Its defaults decide how many sequences run at once (a cap, and the
share of memory the KV cache may take) and what precision the cache is held in. The fitted
numbers come from benchmarks/llm_serving_engines_accuracy.py (each source held out of its own
fit there); the defaults from each engine's documentation at the version named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.predict.accelerator_stacks import SERVING_STACKS, USABLE_MEMORY_SHARE, ServingStack
from perdollar.predict.llm_serving.bands import BuildSpeed
from perdollar.predict.llm_serving.builds import at_build_speed, dated_build, split_build
from perdollar.predict.llm_serving.efficiency import ENGINE_EFFICIENCY, ServingEfficiency
from perdollar.predict.llm_serving.formats import FORMATS, ServingFormat, kv_precision_name, with_kv_precision
from perdollar.predict.llm_serving.load import LLMServingPrediction, RequestShape, predict_llm_serving
from perdollar.predict.llm_serving.timing import GroupShape
from perdollar.workload.llm.architecture import DecoderArchitecture

# vLLM is the engine most teams run (the most-used open serving engine, and the one cloud
# providers' model catalogs ship), so it is what a prediction assumes unless told otherwise.
DEFAULT_ENGINE = "vllm"
# Every engine, for the deployment search to choose the best one per candidate.
ANY_ENGINE = "any"
# The accelerator software stacks a GPU engine runs on unless its record says fewer.
GPU_STACKS = frozenset({"cuda", "rocm"})


@dataclass(frozen=True, slots=True)
class ServingEngine:
    """One serving engine: what it costs beside the kernels, and what it does by default.

    host_step_s: host time of one step with CUDA graphs (or the engine's own fused runtime);
    eager_launch_s_per_layer: what each layer adds when kernels are launched one by one (CUDA
    graphs off); kv_precision: the cache's default precision, "auto" for the model's 16-bit
    activations whatever the weights (vLLM's and SGLang's ``auto``), "format" for the precision
    the quantised checkpoint states (TensorRT-LLM's fp8 recipes quantise the cache too).
    """

    name: str
    efficiency: ServingEfficiency  # fitted kernel fractions (host terms are set from the fields below)
    host_step_s: float
    eager_launch_s_per_layer: float
    cuda_graphs: bool
    chunked_prefill: bool
    max_running: int
    memory_utilisation: float
    kv_precision: str
    version: str
    sources: Mapping[str, str] = field(default_factory=dict)
    formats: frozenset[str] | None = None  # the weight formats it has kernels for (None: every one)
    stacks: frozenset[str] = GPU_STACKS  # the accelerator software stacks it runs on
    build: BuildSpeed | None = None  # a dated build asked for (vllm@2024); None: today's, the record's

    @property
    def family(self) -> str:
        """The engine the record is of, whatever its build (vllm for vllm@2024)."""
        return split_build(self.name)[0]

    def step_efficiency(self, cuda_graphs: bool | None = None) -> ServingEfficiency:
        """The serving model's parameters for this engine as deployed (defaults unless overridden)."""
        graphs = self.cuda_graphs if cuda_graphs is None else cuda_graphs
        deployed = replace(
            self.efficiency,
            step_overhead_s=self.host_step_s,
            step_overhead_s_per_layer=0.0 if graphs else self.eager_launch_s_per_layer,
            memory_utilisation=self.memory_utilisation,
            max_batch=self.max_running,
        )
        return at_build_speed(deployed, self.build.speed) if self.build else deployed

    def format_problem(self, fmt: ServingFormat) -> str:
        """Why this engine cannot serve weights in ``fmt`` ('' when it can)."""
        if self.formats is None or fmt.name in self.formats:
            return ""
        return f"{self.name} has no {fmt.name} kernels (it serves {', '.join(sorted(self.formats))})"

    def serving_format(self, fmt: ServingFormat, kv_precision: str | None = None) -> ServingFormat:
        """``fmt`` with the KV cache this engine holds: ``kv_precision`` when given, else its default."""
        if kv_precision is not None:
            return with_kv_precision(fmt, kv_precision)
        if self.kv_precision == "auto":
            return with_kv_precision(fmt, "bf16" if fmt.name == "bf16" else "fp16")
        if self.kv_precision == "format":
            return fmt
        return with_kv_precision(fmt, self.kv_precision)


# Where an engine's fit starts: round fractions, never a fit of the rows it is checked on.
FIT_STARTS = {
    "gpu": ServingEfficiency(bandwidth=0.85, weight_only_bandwidth=0.70, compute=0.60, kv_bandwidth=0.70),
    "tensorrt-llm": replace(ENGINE_EFFICIENCY["tensorrt-llm"], bandwidth=0.85, step_overhead_s_per_layer=0.0),
}
# Fitted on every row of each engine (benchmarks/llm_serving_engines_accuracy.py prints the same fit
# and each source held out of it). vLLM: 5 batch-1-to-8 decode rows of 3 sources (H100, A100, RTX
# A6000): only the weight-streaming fraction and the host time are pinned; the rest keep the start.
# Its mixture-of-experts parameters (moe_layer.py), fitted on its 22 MoE rows of 3 sources (H100
# gpt-oss-120b MXFP4, A100 Qwen3-30B-A3B bf16, H200 DeepSeek-R1 block-scaled fp8) with the rest as
# above: a fused-MoE floor of 60 µs a layer, 16-bit and fp8 grouped products streaming at 40% of
# the datasheet, the 4-bit MoE kernels at the grid's top (100%: the shared floor is more than
# gpt-oss's kernels spend). benchmarks/llm_serving_moe_accuracy.py holds each source out.
_VLLM_FIT = replace(FIT_STARTS["gpu"], bandwidth=0.825, moe_floor_s=60e-6, expert_bandwidth=0.40,
                    expert_weight_only_bandwidth=1.0)  # fmt: skip
_VLLM_HOST_S = 1.1e-3
# TensorRT-LLM: 412 rows of 4 documentation versions (in-flight batching at full load, static
# batches, batch-1 TTFT), none a batch-1 decode: the weight-streaming fraction keeps its start and
# the host time (6 ms) is what its loaded steps and TTFTs carry, likely above a batch-1 step's.
# None is of a mixture of experts: its MoE layers keep the neutral parameters (no floor, the dense
# streaming shares), unvalidated.
_TRT_FIT = replace(FIT_STARTS["tensorrt-llm"], weight_only_bandwidth=0.75, compute=0.625, kv_bandwidth=0.70,
                   allreduce_bandwidth=0.35)  # fmt: skip
_TRT_HOST_S = 6.0e-3
# transformers: perdollar's own 74 step timings on an H200 and an H100 (benchmarks/RESULTS.md). Two
# chips cannot separate the weight-streaming fraction from the host time: the fraction is vLLM's
# (the same cuBLAS kernels read the weights). Its dynamic cache copies every layer's keys and
# values each step: the cache "streams" at a fifth of the bandwidth. No transformers row is of a
# mixture of experts: its MoE parameters are vLLM's.
_HF_FIT = replace(_VLLM_FIT, kv_bandwidth=0.20)
_HF_HOST_S = 14e-3

ENGINES: dict[str, ServingEngine] = {
    e.name: e
    for e in (
        ServingEngine(
            "vllm",
            _VLLM_FIT,
            host_step_s=_VLLM_HOST_S,
            eager_launch_s_per_layer=40e-6,
            cuda_graphs=True,
            chunked_prefill=True,
            max_running=256,
            memory_utilisation=0.90,
            kv_precision="auto",
            version="0.10",
            sources={
                "max_running": "vLLM engine args, max_num_seqs default 256 (docs.vllm.ai, v0.10)",
                "memory_utilisation": "vLLM engine args, gpu_memory_utilization default 0.9",
                "cuda_graphs": "vLLM engine args, enforce_eager default False (CUDA graphs on)",
                "chunked_prefill": "vLLM V1 engine: chunked prefill always on (v0.8+ docs)",
                "kv_precision": "vLLM engine args, kv_cache_dtype default 'auto' (model data type)",
            },
        ),
        ServingEngine(
            "sglang",
            # Its published CUDA rows (two sources, both DeepSeek-R1 on H200s, one with DP
            # attention) cannot pin a fit of their own (each held out of a fit on the other misses
            # by 57-154%): vLLM's kernel fractions, MoE parameters and host time, and those rows
            # check them out of sample.
            _VLLM_FIT,
            host_step_s=_VLLM_HOST_S,
            eager_launch_s_per_layer=40e-6,
            cuda_graphs=True,
            chunked_prefill=True,
            max_running=1024,
            memory_utilisation=0.88,
            kv_precision="auto",
            version="0.4",
            sources={
                "max_running": "SGLang server args, max_running_requests unset: sized from the KV pool",
                "memory_utilisation": "SGLang server args, mem_fraction_static about 0.88 on 80 GB GPUs",
                "cuda_graphs": "SGLang server args, disable_cuda_graph default False",
                "chunked_prefill": "SGLang server args, chunked_prefill_size 8192 on large GPUs",
                "kv_precision": "SGLang server args, kv_cache_dtype default 'auto'",
            },
        ),
        ServingEngine(
            "tensorrt-llm",
            _TRT_FIT,
            host_step_s=_TRT_HOST_S,
            eager_launch_s_per_layer=0.0,
            cuda_graphs=True,
            chunked_prefill=True,
            max_running=2048,
            memory_utilisation=0.90,
            kv_precision="format",
            version="0.12",
            sources={
                "max_running": "trtllm-bench default max_batch_size 2048 (TensorRT-LLM performance docs)",
                "memory_utilisation": "TensorRT-LLM KvCacheConfig free_gpu_memory_fraction default 0.9",
                "cuda_graphs": "TensorRT-LLM engines run a compiled runtime; CUDA graphs in the PyTorch flow",
                "chunked_prefill": "trtllm-bench enables chunked context by default",
                "kv_precision": "TensorRT-LLM fp8 quantisation recipes quantise the KV cache too",
                "stacks": "TensorRT-LLM builds its engines with CUDA and TensorRT: NVIDIA GPUs only",
            },
            stacks=frozenset({"cuda"}),
        ),
        ServingEngine(
            "tgi",
            # Its only published rows with their setting stated are on MI300X (ROCm, read by
            # benchmarks/rocm_serving_check.py): vLLM's fit, unchecked on CUDA.
            _VLLM_FIT,
            host_step_s=_VLLM_HOST_S,
            eager_launch_s_per_layer=40e-6,
            cuda_graphs=True,
            chunked_prefill=True,
            max_running=128,
            memory_utilisation=0.90,
            kv_precision="auto",
            version="3.0",
            sources={
                "max_running": "TGI launcher, --max-concurrent-requests default 128",
                "memory_utilisation": "TGI launcher sizes max_batch_total_tokens from free memory",
                "cuda_graphs": "TGI launcher, --cuda-graphs default 1,2,4,8,16,32",
                "chunked_prefill": "TGI v3 enables chunked prefill (prefix caching) by default",
                "kv_precision": "TGI launcher, --kv-cache-dtype unset: the model's dtype",
                "formats": "TGI quantisation options: fp8, AWQ/GPTQ/Marlin int4, bitsandbytes int8",
            },
            formats=frozenset({"fp16", "bf16", "fp8", "int8", "int4"}),
        ),
        ServingEngine(
            "llama.cpp",
            ENGINE_EFFICIENCY["llama.cpp"],
            host_step_s=0.0,
            eager_launch_s_per_layer=100e-6,
            cuda_graphs=False,
            chunked_prefill=False,
            max_running=4,
            memory_utilisation=0.95,
            kv_precision="fp16",
            version="b3000+",
            sources={
                "max_running": "llama-server --parallel default (4 slots in recent builds)",
                "memory_utilisation": "llama.cpp allocates the KV cache for its context up front",
                "cuda_graphs": "llama.cpp's CUDA graphs cover batch-1 decode only; fit per layer",
                "chunked_prefill": "llama.cpp processes prompts in ubatches, not mixed iterations",
                "kv_precision": "llama.cpp --cache-type-k/-v default f16",
                "formats": "GGUF: f16/bf16, Q8_0, Q4 variants; no fp8 or fp4 matrix kernels",
            },
            formats=frozenset({"fp16", "bf16", "int8", "int4", "q4_k_m"}),
        ),
        ServingEngine(
            "hf",
            _HF_FIT,
            host_step_s=_HF_HOST_S,
            eager_launch_s_per_layer=0.0,
            cuda_graphs=False,
            chunked_prefill=False,
            max_running=256,
            memory_utilisation=0.80,
            kv_precision="auto",
            version="transformers 5.17",
            sources={
                "max_running": "transformers generate(): a static batch, no engine cap",
                "memory_utilisation": "benchmarks/gpu_llm_steps.py keeps the cache under 80% of memory",
                "cuda_graphs": "transformers dynamic cache: eager kernels",
                "chunked_prefill": "generate() prefills the whole batch, then decodes",
                "kv_precision": "the dynamic cache holds the model's dtype",
            },
        ),
    )
}


def serving_engine_for(stack: ServingStack) -> ServingEngine:
    """A non-GPU stack as a serving-engine record, so the serving model sizes its replicas."""
    efficiency = ServingEfficiency(bandwidth=stack.bandwidth, weight_only_bandwidth=stack.bandwidth,
                                   compute=stack.compute, kv_bandwidth=stack.bandwidth,
                                   step_overhead_s_per_layer=0.0, step_overhead_s=stack.step_s)  # fmt: skip
    return ServingEngine(name=stack.name, efficiency=efficiency, host_step_s=stack.step_s,
                         eager_launch_s_per_layer=0.0, cuda_graphs=True, chunked_prefill=True, max_running=64,
                         memory_utilisation=USABLE_MEMORY_SHARE, kv_precision="auto", version=stack.version,
                         sources=dict(stack.sources), formats=stack.formats,
                         stacks=frozenset({stack.software_stack}))  # fmt: skip


# The engines of the non-GPU stacks (nxd-inference, jetstream, vllm-gaudi), by name.
STACK_ENGINES: dict[str, ServingStack] = {stack.name: stack for stack in SERVING_STACKS.values()}


def engine_key(name: str | None) -> str:
    """``name`` as the engine records spell it (None: the default engine), a build asked for kept
    after it (``vllm@2024``)."""
    engine, build = split_build((name or DEFAULT_ENGINE).strip().lower())
    key = {"trtllm": "tensorrt-llm", "tensorrt_llm": "tensorrt-llm", "llamacpp": "llama.cpp",
           "transformers": "hf", "text-generation-inference": "tgi"}.get(engine, engine)  # fmt: skip
    return f"{key}@{build}" if build else key


def serving_engine(name: str | None) -> ServingEngine:
    """The engine called ``name`` (None: the default engine); a non-GPU stack's engine by its name;
    ``ENGINE@BUILD`` (vllm@2024, vllm@0.7): that engine at a dated build's held-out speed."""
    key, asked = split_build(engine_key(name))
    if key in STACK_ENGINES:
        engine = serving_engine_for(STACK_ENGINES[key])
    elif key in ENGINES:
        engine = ENGINES[key]
    else:
        raise PerdollarError(
            f"unknown serving engine {(name or '').partition('@')[0].strip()!r}",
            f"use one of {', '.join([*ENGINES, *STACK_ENGINES])} (or {ANY_ENGINE})",
        )
    build = dated_build(engine.name, asked, engine.version) if asked else None
    if build is None:
        return engine
    return replace(engine, name=f"{engine.name}@{build.year}", version=f"{build.year} builds", build=build)


def engines_on(accelerator: Accelerator) -> tuple[str, ...]:
    """The engines that serve on ``accelerator``: its own stack's where it has one (Neuron, XLA,
    Gaudi: none of the GPU engines' fitted records describes those runtimes), else every GPU engine
    whose record runs on the chip's stack."""
    own = SERVING_STACKS.get(accelerator.software_stack)
    if own is not None:
        return (own.name,) if accelerator.key in own.chips else ()
    return tuple(name for name, engine in ENGINES.items() if accelerator.software_stack in engine.stacks)


def engine_chip_problem(name: str | None, accelerator: Accelerator) -> str:
    """Why the engine called ``name`` cannot serve on ``accelerator`` ('' when it can; None and
    ``any`` stand for the chip's own choice and never fail)."""
    if name is None or name.strip().lower() == ANY_ENGINE:
        return ""
    key = serving_engine(name).family
    allowed = engines_on(accelerator)
    if key in allowed:
        return ""
    own = SERVING_STACKS.get(accelerator.software_stack)
    listed = ", ".join(allowed) if allowed else "none is modelled"
    if own is not None and allowed:
        listed += f" ({own.label})"
    return f"{key} does not run on {accelerator.key}; engines for {accelerator.key}: {listed}"


def engine_note(name: str | None, kv_precision: str | None) -> str:
    """One line saying which engine the predictions assume, with its defaults."""
    cache = f"KV cache in {kv_precision}" if kv_precision else "each engine's default KV-cache precision"
    if name is not None and name.strip().lower() == ANY_ENGINE:
        return f"serving engine: the best of {', '.join(ENGINES)} for each deployment; {cache}"
    engine = serving_engine(name)
    graphs = "CUDA graphs" if engine.cuda_graphs else "no CUDA graphs"
    default_cache = {"auto": "the model's 16-bit dtype", "format": "the checkpoint's precision"}
    cache = f"KV cache in {kv_precision or default_cache.get(engine.kv_precision, engine.kv_precision)}"
    return (f"serving engine: {engine.family} {engine.version} defaults (up to {engine.max_running} running "
            f"sequences, {engine.memory_utilisation:.0%} of memory, {graphs}, {cache})")  # fmt: skip


def checked_engine_options(engine: str | None, kv_precision: str | None) -> None:
    """A mistyped engine or KV-cache precision is refused before any work, naming the choices."""
    engine_choices(engine)
    with_kv_precision(FORMATS["fp16"], kv_precision)


def engine_choices(name: str | None, accelerator: Accelerator | None = None) -> tuple[ServingEngine, ...]:
    """The engines a deployment search tries: every GPU engine for ``any`` (on ``accelerator``,
    those that run there), else the one named."""
    if name is not None and name.strip().lower() == ANY_ENGINE:
        every = tuple(ENGINES.values())
        if accelerator is None:
            return every
        return tuple(e for e in every if accelerator.software_stack in e.stacks)
    return (serving_engine(name),)


def predict_with_engine(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    fmt: ServingFormat,
    work: RequestShape,
    *,
    shape: GroupShape = GroupShape(),
    batch: int | None = None,
    engine: str | None = None,
    kv_precision: str | None = None,
) -> LLMServingPrediction:
    """The prediction under ``engine``'s defaults (``any``: the engine that serves the most tokens/s
    of those that run on the chip); an engine that does not run on the chip is refused."""
    problem = engine_chip_problem(engine, accelerator)
    if problem:
        raise PerdollarError(problem, "give --engine one of those, or drop --engine")
    choices = engine_choices(engine, accelerator)
    if not choices:
        raise PerdollarError(f"no serving engine perdollar models runs on {accelerator.key}",
                             "choose a GPU (--accelerator H100)")  # fmt: skip
    best: LLMServingPrediction | None = None
    for choice in choices:
        held = choice.serving_format(fmt, kv_precision)
        result = predict_llm_serving(
            arch, accelerator, held, work, shape=shape, batch=batch, efficiency=choice.step_efficiency()
        )
        result = replace(result, engine=choice.name, kv_precision=kv_precision_name(held))
        problem = choice.format_problem(fmt)
        if problem:
            result = replace(result, fits=False, fit_reason=problem, bottleneck="unsupported-format")
        if best is None or (result.fits, result.output_tokens_per_second) > (
            best.fits,
            best.output_tokens_per_second,
        ):
            best = result
    assert best is not None  # engine_choices names at least one engine
    return best
