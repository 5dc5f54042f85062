"""One decoder layer's work and activation memory, from a traced step (not a rule of thumb).

A training step of the model cut to one layer and to two layers is traced on fake tensors
(operators with their FLOPs and bytes, and the storages autograd saves for backward); their
difference is one layer, and the rest is the embedding, final norm, LM head and loss. Both are
traced at micro-batch 1 and 2 and extended linearly to any micro-batch (every operator's work
and every saved tensor grows linearly with the number of sequences at a fixed sequence length),
so four small traces serve every plan; results are cached per (architecture, sequence length,
precision, whether the base weights train), in memory and on disk (``llm_trace_store``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from perdollar.errors import PerdollarError
from perdollar.profile.model import OperatorRecord
from perdollar.workload.llm.architecture import DecoderArchitecture


@dataclass(frozen=True, slots=True)
class LayerTrace:
    """Per micro-batch of ``micro_batch`` sequences: one layer's and the rest's operators and saved bytes."""

    micro_batch: int
    seq_len: int
    layer_ops: tuple[OperatorRecord, ...]
    other_ops: tuple[OperatorRecord, ...]
    layer_saved_bytes: float  # activations one layer keeps for its backward, elementwise chains fused
    other_saved_bytes: float  # embedding, final norm, logits and loss, likewise
    hidden_state_bytes: float  # one layer's input (what activation checkpointing keeps)
    layer_saved_eager_bytes: float = 0.0  # what the model's eager code keeps (one kernel per operator)
    other_saved_eager_bytes: float = 0.0
    layer_saved_selective_bytes: float = 0.0  # kept under selective checkpointing (beside the layer input)
    # Share of the elementwise chains' memory traffic left once they are fused (profile.fusion),
    # from the forward's dataflow, for forward and backward alike.
    layer_fused_traffic_share: float = 1.0
    other_fused_traffic_share: float = 1.0


_Key = tuple[object, ...]
# FP8 training keeps bf16 autocast around FP8 linear layers: its operators and saved activations are
# those of amp-bf16 (the predictor moves the linear GEMMs to the chip's FP8 rate).
TRACED_AS = {"fp8": "amp-bf16", "fp8-rowwise": "amp-bf16"}


def _key(op: OperatorRecord) -> _Key:
    return (op.name, op.phase, op.op_class, op.dtype, op.shape, op.gemm_mnk)


def _scaled(op: OperatorRecord, count: int, per_call: OperatorRecord) -> OperatorRecord:
    share = count / max(per_call.count, 1)
    return replace(
        op,
        count=count,
        flops=per_call.flops * share,
        bytes_read=per_call.bytes_read * share,
        bytes_written=per_call.bytes_written * share,
    )


def _split_layers(one: tuple[OperatorRecord, ...], two: tuple[OperatorRecord, ...]) -> tuple[list, list]:
    """(one layer's records, the rest) from traces of the 1-layer and 2-layer models."""
    first = {_key(op): op for op in one}
    layer, other = [], []
    for op in two:
        base = first.get(_key(op))
        once = base.count if base is not None else 0
        per_layer = op.count - once
        rest = once - per_layer
        if per_layer > 0:
            layer.append(_scaled(op, per_layer, op))
        if rest > 0:
            other.append(_scaled(op, rest, op))
    return layer, other


def _trace_model(
    arch: DecoderArchitecture, layers: int, micro_batch: int, seq_len: int, precision: str, train_base: bool
) -> tuple[tuple[OperatorRecord, ...], float, float, float, float, tuple[float, float]]:
    """(operators, saved bytes fused, eager and under selective checkpointing, hidden-state bytes,
    the forward's chain traffic fused and eager) of forward + backward of a ``layers``-layer model
    (:mod:`perdollar.profile.fusion` says what fusion and selective checkpointing keep)."""
    import torch

    from perdollar.profile.fusion import DataflowFakeMode
    from perdollar.profile.tracer import _materialise_fake, _OperatorRecorder, _phase, _SavedTensors
    from perdollar.workload.llm.meta_model import build_meta_model, trace_config
    from perdollar.workload.step import autocast_dtype, parameter_dtype

    recorder = _OperatorRecorder(tf32=precision == "tf32")
    fake_mode = DataflowFakeMode(recorder)
    model = build_meta_model(trace_config(arch, num_layers=layers))
    # Mixed precision at scale computes with half-precision copies of the weights: FSDP's and
    # ZeRO's mixed-precision policies gather them in half precision, Megatron keeps them so, and
    # frozen base weights are stored so. The per-forward cast plain DDP under autocast does is
    # priced apart (predict.llm.device.weight_cast_seconds), not traced.
    storage = autocast_dtype(precision) or parameter_dtype(precision)
    model = _materialise_fake(model, fake_mode, storage)
    if not train_base:
        for param in model.parameters():
            param.requires_grad_(False)
        model.get_input_embeddings().weight.requires_grad_(True)  # something must need a gradient
    live = fake_mode.live
    weights = {live.track(t) for t in list(model.parameters()) + list(model.buffers())}
    saved = _SavedTensors(live)
    autocast = autocast_dtype(precision)
    hidden_bytes = micro_batch * seq_len * arch.hidden_size * (4 if storage == torch.float32 else 2)
    with fake_mode:
        ids = torch.zeros(micro_batch, seq_len, dtype=torch.long)
        context = (
            torch.autocast("cpu", dtype=autocast)
            if autocast is not None
            else torch.autocast("cpu", enabled=False)
        )
        with (
            context,
            torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack),
            _phase(recorder, "forward"),
        ):
            loss = model(input_ids=ids, labels=ids).loss
        with _phase(recorder, "backward"):
            loss.backward()
    activations = saved.serials - weights
    size = {s: live._history[s].nbytes for s in activations}
    eager = float(sum(size.values()))
    fused = float(sum(size[s] for s in fake_mode.kept_after_fusion(activations)))
    selective = float(fake_mode.kept_by_selective_checkpointing(activations, size))
    chains = (fake_mode.fused_chain_bytes(), fake_mode.chain_eager_bytes)
    return recorder.records(), fused, eager, selective, float(hidden_bytes), chains


@functools.lru_cache(maxsize=64)
def _traced(
    arch: DecoderArchitecture, micro_batch: int, seq_len: int, precision: str, train_base: bool
) -> LayerTrace:
    from perdollar.profile import llm_trace_store

    key = llm_trace_store.trace_key(arch, micro_batch, seq_len, precision, train_base)
    shipped = llm_trace_store.shipped_key(arch, micro_batch, seq_len, precision, train_base)
    stored = llm_trace_store.load(key) or llm_trace_store.load_shipped(shipped)
    if stored is not None:
        return stored
    traced = _trace_layers(arch, micro_batch, seq_len, precision, train_base)
    llm_trace_store.save(key, traced)
    return traced


def _trace_layers(
    arch: DecoderArchitecture, micro_batch: int, seq_len: int, precision: str, train_base: bool
) -> LayerTrace:
    try:
        one, saved_one, eager_one, selective_one, hidden, chains_one = _trace_model(
            arch, 1, micro_batch, seq_len, precision, train_base
        )
        two, saved_two, eager_two, selective_two, _, chains_two = _trace_model(
            arch, 2, micro_batch, seq_len, precision, train_base
        )
    except PerdollarError:
        raise
    except Exception as error:  # transformers and fake tensors can fail on unusual configs
        raise PerdollarError(
            f"tracing a layer of {arch.name!r} failed: {type(error).__name__}: {error}",
            "check the config (pass --debug for the traceback)",
        ) from error
    layer, other = _split_layers(one, two)
    layer_saved, layer_eager = saved_two - saved_one, eager_two - eager_one
    layer_chains = (chains_two[0] - chains_one[0], chains_two[1] - chains_one[1])
    other_chains = (chains_one[0] - layer_chains[0], chains_one[1] - layer_chains[1])
    return LayerTrace(
        micro_batch,
        seq_len,
        tuple(layer),
        tuple(other),
        layer_saved,
        saved_one - layer_saved,
        hidden,
        layer_eager,
        eager_one - layer_eager,
        selective_two - selective_one,
        _share(*layer_chains),
        _share(*other_chains),
    )


def _share(fused: float, eager: float) -> float:
    return min(max(fused / eager, 0.0), 1.0) if eager > 0 else 1.0


def _extend(a: OperatorRecord, b: OperatorRecord, micro_batch: int) -> OperatorRecord:
    """The record at ``micro_batch`` on the line through its values at 1 (``a``) and 2 (``b``)."""
    step = micro_batch - 1

    def line(x: float, y: float) -> float:
        return max(x + (y - x) * step, 0.0)

    mnk = None
    if a.gemm_mnk is not None and b.gemm_mnk is not None:
        mnk = tuple(int(line(x, y)) for x, y in zip(a.gemm_mnk, b.gemm_mnk, strict=True))
    return replace(
        a,
        flops=line(a.flops, b.flops),
        bytes_read=line(a.bytes_read, b.bytes_read),
        bytes_written=line(a.bytes_written, b.bytes_written),
        shape=f"{a.shape} (micro-batch {micro_batch})",
        gemm_mnk=mnk,  # type: ignore[arg-type]
    )


def _merged(ops: list[OperatorRecord]) -> OperatorRecord:
    biggest = max(ops, key=lambda op: op.flops)
    return replace(
        biggest,
        count=sum(op.count for op in ops),
        flops=sum(op.flops for op in ops),
        bytes_read=sum(op.bytes_read for op in ops),
        bytes_written=sum(op.bytes_written for op in ops),
    )


def _paired(
    a: tuple[OperatorRecord, ...], b: tuple[OperatorRecord, ...]
) -> list[tuple[OperatorRecord, OperatorRecord]]:
    """Records of the same operator at micro-batch 1 and 2, side by side.

    Within one (operator, phase, class, dtype) the records pair by size; where shapes that
    coincide at one micro-batch split at the other (so the counts of records differ) the group
    is merged into one record on both sides.
    """

    def groups(ops: tuple[OperatorRecord, ...]) -> dict[_Key, list[OperatorRecord]]:
        out: dict[_Key, list[OperatorRecord]] = {}
        for op in ops:
            out.setdefault((op.name, op.phase, op.op_class, op.dtype), []).append(op)
        return out

    left, right = groups(a), groups(b)
    pairs: list[tuple[OperatorRecord, OperatorRecord]] = []
    for key, first in left.items():
        second = right.get(key)
        if second is None:
            continue
        if len(first) == len(second):
            pairs.extend(
                zip(
                    sorted(first, key=lambda op: op.flops),
                    sorted(second, key=lambda op: op.flops),
                    strict=True,
                )
            )
        else:
            pairs.append((_merged(first), _merged(second)))
    return pairs


@functools.lru_cache(maxsize=512)
def layer_trace(
    arch: DecoderArchitecture,
    micro_batch: int,
    seq_len: int,
    precision: str = "amp-bf16",
    *,
    train_base: bool = True,
) -> LayerTrace:
    """One layer's and the rest's work and activations at ``micro_batch`` sequences of ``seq_len`` tokens.

    Saved bytes are the slope between micro-batch 1 and 2 times the micro-batch: the part that does
    not grow with the batch is the low-precision copy of the weights autocast keeps for backward,
    which the weight accounting of the plan already holds.
    """
    traced_as = TRACED_AS.get(precision, precision)
    at_one = _traced(arch, 1, seq_len, traced_as, train_base)
    at_two = _traced(arch, 2, seq_len, traced_as, train_base)

    def per_sequence(field: str) -> float:
        return max(getattr(at_two, field) - getattr(at_one, field), 0.0)

    nearest = at_one if micro_batch == 1 else at_two
    if micro_batch <= 2:
        layer_ops, other_ops = nearest.layer_ops, nearest.other_ops
    else:
        layer_ops = tuple(_extend(a, b, micro_batch) for a, b in _paired(at_one.layer_ops, at_two.layer_ops))
        other_ops = tuple(_extend(a, b, micro_batch) for a, b in _paired(at_one.other_ops, at_two.other_ops))
    return LayerTrace(
        micro_batch,
        seq_len,
        layer_ops,
        other_ops,
        per_sequence("layer_saved_bytes") * micro_batch,
        per_sequence("other_saved_bytes") * micro_batch,
        at_one.hidden_state_bytes * micro_batch,
        per_sequence("layer_saved_eager_bytes") * micro_batch,
        per_sequence("other_saved_eager_bytes") * micro_batch,
        per_sequence("layer_saved_selective_bytes") * micro_batch,
        nearest.layer_fused_traffic_share,
        nearest.other_fused_traffic_share,
    )
