"""Accelerator memory per GPU of a training plan: model states as the plan shards them, activations,
FSDP's unsharded layer buffers and the framework's reserve.

Model states follow the ZeRO paper's accounting (Rajbhandari et al. 2020): mixed precision keeps
2-byte weights and gradients and 12 bytes of fp32 master weights and Adam moments per trained
parameter (16 bytes in all); pure bf16/fp16 keeps 2 + 2 + 4 (moments in half precision); fp32
4 + 4 + 8. ZeRO-1 shards the optimizer states over the data-parallel group, ZeRO-2 also the
gradients, FSDP full-shard also the weights; HSDP shards inside a node only. Tensor and pipeline
parallelism split every state by their degrees first.

LoRA freezes the base weights (half precision, no gradient, no optimizer state) and trains
rank-r adapters on every attention and MLP matrix; QLoRA stores those matrices in 4-bit NF4 with
double-quantised constants (4.127 bits per weight, Dettmers et al. 2023), embeddings and head in bf16.

The optimizer-state bytes above are AdamW's; the plan's optimizer sets them
(:mod:`perdollar.predict.llm.optimizers`: 8-bit states, SGD's one state). A paged optimizer's
moments (not the float32 master weights) may spill to host memory: they count toward the demand
but not against the fit.

The estimate keeps a reserve of its own (:data:`DEFAULT_MEMORY_HEADROOM` of the device) for what
it does not count: the CUDA context, the caching allocator's fragmentation, NCCL's buffers. A
plan that eats into that reserve but leaves :data:`TIGHT_FIT_RESERVE` of the device free is
*tight*: it runs where the allocator packs well (PyTorch's ``expandable_segments``, a steady
sequence length), so it is ranked, with the margin said, after plans that fit with room. The
CUDA context takes about 0.3–0.5 GiB and the allocator's waste on a fixed-shape step a few
percent (PyTorch's CUDA memory-management notes); 5% of the device covers both on a 16 GB card
and leaves more on larger ones. Only a plan past that is refused as an overrun.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from perdollar.predict.llm.context_expert import expert_divisor, expert_params_share
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.workload.llm.architecture import DecoderArchitecture

GIB = 2**30
DEFAULT_MEMORY_HEADROOM = 0.10  # allocator fragmentation, CUDA context, NCCL buffers
TIGHT_FIT_RESERVE = 0.05  # of the device, left free by a tight plan (see the module's docstring)
NF4_BYTES_PER_WEIGHT = 4.127 / 8
DDP_BUCKET_BYTES = 2 * 25 * 2**20  # two 25 MiB gradient buckets in flight

# (weight, gradient, optimizer state) bytes per trained parameter.
_STATE_BYTES = {
    "amp-bf16": (2.0, 2.0, 12.0),
    "amp-fp16": (2.0, 2.0, 12.0),
    "bf16": (2.0, 2.0, 4.0),
    "fp16": (2.0, 2.0, 4.0),
    "fp32": (4.0, 4.0, 8.0),
    "tf32": (4.0, 4.0, 8.0),
}


def state_bytes_per_param(precision: str) -> tuple[float, float, float]:
    return _STATE_BYTES.get(precision, _STATE_BYTES["amp-bf16"])


def lora_params(arch: DecoderArchitecture, rank: int, targets: str = "all") -> int:
    """Adapter parameters: r × (fan-in + fan-out) for every attention and MLP matrix of every layer
    (``targets="attention-qkv"``: for the fused query-key-value projection alone)."""
    hidden, q_out, kv = arch.hidden_size, arch.num_attention_heads * arch.head_dim, arch.kv_dim
    if targets == "attention-qkv":
        return rank * arch.num_layers * (hidden + q_out + 2 * kv)
    attention = (hidden + q_out) + 2 * (hidden + kv) + (q_out + hidden)
    matrices = 3 if arch.gated_mlp else 2
    if not arch.is_moe:
        return rank * arch.num_layers * (attention + matrices * (hidden + arch.intermediate_size))
    routed = arch.num_experts * matrices * (hidden + arch.intermediate_size)
    shared = matrices * (hidden + arch.shared_intermediate_size) if arch.shared_intermediate_size else 0
    dense = matrices * (hidden + (arch.dense_intermediate_size or arch.intermediate_size))
    mlps = arch.moe_layers * (routed + shared) + arch.dense_layers * dense
    return rank * (arch.num_layers * attention + mlps)


def adapted_params(arch: DecoderArchitecture) -> int:
    """The base parameters LoRA adapts (and QLoRA quantises): attention and MLP matrices."""
    roles = arch.params_by_role()
    return sum(roles.get(role, 0) for role in ("attention", "dense_mlp", "routed_experts", "shared_experts"))


@functools.lru_cache(maxsize=256)
def _counts(arch: DecoderArchitecture, rank: int, targets: str) -> tuple[float, float, float, float]:
    """(all parameters, one layer's, LoRA adapter parameters, adapted base parameters), computed once."""
    return (
        float(arch.total_params),
        float(arch.params_per_layer),
        float(lora_params(arch, rank, targets)),
        float(adapted_params(arch)),
    )


def in_backward_gradient_bytes(arch: DecoderArchitecture, plan: TrainingPlan, grad_b: float) -> float:
    """Gradient bytes alive at once when the optimizer steps inside the backward: the largest
    trained tensor's gradient and the next one being computed, twice the largest. In full
    training that is the embedding (or the output head, vocabulary × hidden); LoRA's largest
    adapter matrix is rank × the widest dimension it adapts."""
    if plan.finetune == "full":
        largest = arch.vocab_size * arch.hidden_size
    else:
        largest = plan.lora_rank * max(arch.hidden_size, arch.intermediate_size)
    return 2.0 * largest * grad_b / plan.tensor_parallel


def sharding_degrees(
    plan: TrainingPlan, data_parallel: int, data_parallel_in_node: int
) -> tuple[int, int, int]:
    """Over how many GPUs (weights, gradients, optimizer states) are sharded."""
    shard = {"ddp": 1, "zero1": 1, "zero2": 1, "fsdp": data_parallel, "hsdp": data_parallel_in_node}
    weights = shard[plan.strategy]
    gradients = data_parallel if plan.strategy in ("zero2", "fsdp") else weights
    optimizer = data_parallel if plan.strategy in ("zero1", "zero2", "fsdp") else weights
    return weights, gradients, optimizer


@dataclass(frozen=True, slots=True)
class ModelStates:
    """Bytes per GPU of weights, gradients and optimizer states, before activations."""

    weights: float
    gradients: float
    optimizer_states: float
    trainable_params_per_gpu: float  # what the optimizer steps on one GPU
    layer_weight_bytes: float  # one layer's weights on one GPU, unsharded (for FSDP's buffers)
    layer_gradient_bytes: float
    gradient_share: float = 1.0  # gradient elements reduced per trained parameter (see model_states)
    pageable_states: float = 0.0  # of the optimizer states, a paged optimizer's moments (not the master)

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer_states


def model_states(
    arch: DecoderArchitecture,
    plan: TrainingPlan,
    *,
    data_parallel: int,
    data_parallel_in_node: int,
    precision: str = "amp-bf16",
) -> ModelStates:
    weight_b, grad_b, _ = state_bytes_per_param(precision)
    optim_b = plan.resolved_optimizer.state_bytes(precision)
    model_split = plan.tensor_parallel * plan.pipeline_parallel
    shard_w, shard_g, shard_o = sharding_degrees(plan, data_parallel, data_parallel_in_node)
    total, per_layer, adapters, adapted = _counts(arch, plan.lora_rank, plan.resolved_framework.lora_targets)
    if plan.finetune == "full":
        trained, frozen_bytes = total, 0.0
    else:
        trained = adapters
        frozen_b = weight_b if precision in ("fp32", "tf32") else 2.0
        per_adapted = NF4_BYTES_PER_WEIGHT if plan.finetune == "qlora" else frozen_b
        frozen_bytes = adapted * per_adapted + (total - adapted) * frozen_b
    # Expert parallelism splits the routed experts' share of each state further (context_expert).
    experts = expert_params_share(arch) if plan.expert_parallel > 1 else 0.0

    def per_gpu(amount: float, shard: int) -> float:
        return amount * ((1 - experts) / shard + experts / expert_divisor(plan, shard)) / model_split

    # FSDP's flat parameter of a layer mixing frozen and trained weights (use_orig_params) keeps,
    # and reduce-scatters, a gradient of the whole of it (PyTorch's FSDP documentation).
    graded = trained
    if plan.finetune != "full" and plan.strategy in ("fsdp", "hsdp"):
        graded = total if plan.resolved_framework.fsdp_frozen_gradients else trained
    optimizer = 0.0 if plan.cpu_offload else per_gpu(trained * optim_b, shard_o)
    chosen = plan.resolved_optimizer
    # Only the moments live in the optimizer's unified memory; the float32 master is the parameter.
    pageable = optimizer * chosen.moment_share(precision) if chosen.paged else 0.0
    layer_share = per_layer / max(total, 1.0)
    # A layer gathered whole (FSDP's unsharded buffers) holds only the rank's own experts: 1/E_p.
    if experts:
        layer_share *= 1 - experts * (1 - 1 / plan.expert_parallel)
    layer_weights = (frozen_bytes + trained * weight_b) * layer_share / plan.tensor_parallel
    gradients = per_gpu(graded * grad_b, shard_g)
    if plan.optimizer_in_backward:
        gradients = min(gradients, in_backward_gradient_bytes(arch, plan, grad_b))
    return ModelStates(
        weights=per_gpu(frozen_bytes + trained * weight_b, shard_w),
        gradients=gradients,
        optimizer_states=optimizer,
        trainable_params_per_gpu=per_gpu(trained, shard_o),
        layer_weight_bytes=layer_weights,
        layer_gradient_bytes=graded * grad_b * layer_share / plan.tensor_parallel,
        gradient_share=graded / max(trained, 1.0),
        pageable_states=pageable,
    )


@dataclass(frozen=True, slots=True)
class MemoryPerGPU:
    """What one GPU holds at the peak of a step, in bytes, and what it has."""

    weights: float
    gradients: float
    optimizer_states: float
    activations: float
    buffers: float  # FSDP's unsharded layers, DDP's gradient buckets
    capacity: float  # usable bytes after the reserve
    fixed: float  # everything that does not grow with the micro-batch
    per_sequence: float  # activation bytes per sequence of micro-batch
    pageable: float = 0.0  # of the optimizer states, what a paged optimizer may spill to the host
    limit: float = 0.0  # the most a tight plan may hold: the device less TIGHT_FIT_RESERVE (0: capacity)

    @property
    def demand(self) -> float:
        """Every byte of the step, wherever it is held."""
        return self.weights + self.gradients + self.optimizer_states + self.activations + self.buffers

    @property
    def paged_out(self) -> float:
        """Optimizer-state bytes a paged optimizer keeps in host memory: what does not fit."""
        return min(max(self.demand - self.capacity, 0.0), self.pageable)

    @property
    def total(self) -> float:
        """Bytes held on the GPU."""
        return self.demand - self.paged_out

    @property
    def fits(self) -> bool:
        """It runs: within the capacity, or tight (into the estimate's reserve, not past the limit)."""
        return self.total <= max(self.limit, self.capacity)

    @property
    def tight(self) -> bool:
        """It runs only inside the estimate's reserve."""
        return self.fits and self.total > self.capacity

    @property
    def spare(self) -> float:
        """Bytes left under the capacity (negative: how far into the reserve a tight plan goes)."""
        return self.capacity - self.total

    def remark(self) -> str:
        """What a fitting plan's margin is, in words ('' when it does not fit)."""
        if not self.fits:
            return ""
        if self.tight:
            return (
                f"tight: {-self.spare / GIB:.1f} GiB over the estimate's margin "
                f"({self.total / GIB:.1f} of {self.limit / (1 - TIGHT_FIT_RESERVE) / GIB:.1f} GiB held)"
            )
        return f"fits with {self.spare / GIB:.1f} GiB to spare"

    @property
    def largest_micro_batch(self) -> int:
        if self.per_sequence <= 0:
            return 0
        return max(math.floor((self.capacity - self.fixed + self.pageable) / self.per_sequence), 0)

    def to_gib(self) -> dict[str, float]:
        return {
            "weights": self.weights / GIB,
            "gradients": self.gradients / GIB,
            "optimizer_states": self.optimizer_states / GIB,
            "activations": self.activations / GIB,
            "buffers": self.buffers / GIB,
            "optimizer_states_paged_to_host": self.paged_out / GIB,
            "total": self.total / GIB,
            "capacity": self.capacity / GIB,
        }


def activation_bytes(
    arch: DecoderArchitecture,
    plan: TrainingPlan,
    *,
    layer_saved: float,
    other_saved: float,
    hidden_state: float,
    micro_batches: int,
    layer_selective: float = 0.0,
) -> float:
    """Saved activations on the busiest pipeline stage, at the plan's micro-batch.

    1F1B keeps up to ``pipeline_parallel`` micro-batches in flight on the first stage; the last
    stage holds one, plus the logits and loss. With checkpointing each layer keeps its input and
    one layer at a time is recomputed in full; selective checkpointing keeps the layer's input and
    what its policy saves (``layer_selective``) and recomputes the rest one layer at a time. Tensor
    parallelism splits what it saves.
    """
    tp, pp = plan.tensor_parallel, plan.pipeline_parallel
    layers = math.ceil(arch.num_layers / pp)
    in_flight: float = min(pp, max(micro_batches, 1))
    if plan.activation_checkpointing:
        per_layer, recompute = hidden_state / tp, layer_saved / tp
    elif plan.selective_checkpointing:
        kept = hidden_state + layer_selective
        per_layer, recompute = kept / tp, max(layer_saved - kept, 0.0) / tp
    else:
        per_layer, recompute = layer_saved / tp, 0.0
    # Interleaving warms up more micro-batches: the first rank holds (1 + (p − 1)/(p·V)) times as
    # many (Korthikanti et al. 2022, section 4.2.3).
    if pp > 1 and plan.virtual_stages > 1:
        in_flight *= 1 + (pp - 1) / (pp * plan.virtual_stages)
    first_stage = layers * in_flight * per_layer + recompute
    last_stage = layers * per_layer + recompute + other_saved / tp
    return max(first_stage, last_stage) if pp > 1 else last_stage


def memory_per_gpu(
    arch: DecoderArchitecture,
    plan: TrainingPlan,
    *,
    states: ModelStates,
    layer_saved_per_sequence: float,
    other_saved_per_sequence: float,
    hidden_state_per_sequence: float,
    micro_batches: int,
    accelerator_memory_gib: float,
    layer_selective_per_sequence: float = 0.0,
    headroom: float = DEFAULT_MEMORY_HEADROOM,
) -> MemoryPerGPU:
    """Peak bytes per GPU of ``plan`` (its micro-batch) and the usable capacity after ``headroom``."""
    per_sequence = activation_bytes(
        arch,
        plan,
        layer_saved=layer_saved_per_sequence,
        other_saved=other_saved_per_sequence,
        hidden_state=hidden_state_per_sequence,
        micro_batches=micro_batches,
        layer_selective=layer_selective_per_sequence,
    )
    if plan.strategy in ("fsdp", "hsdp"):
        # The layer being computed and the one prefetched, gathered whole, and one layer's full gradient.
        buffers = 2 * states.layer_weight_bytes + states.layer_gradient_bytes
    elif plan.strategy == "zero2":
        buffers = states.layer_gradient_bytes
    else:
        buffers = DDP_BUCKET_BYTES if states.gradients else 0.0
    fixed = states.total + buffers
    return MemoryPerGPU(
        weights=states.weights,
        gradients=states.gradients,
        optimizer_states=states.optimizer_states,
        activations=per_sequence * plan.micro_batch,
        buffers=buffers,
        capacity=accelerator_memory_gib * GIB * (1 - headroom),
        limit=accelerator_memory_gib * GIB * (1 - TIGHT_FIT_RESERVE),
        fixed=fixed,
        per_sequence=per_sequence,
        pageable=states.pageable_states,
    )
