"""Trace one step on fake tensors: every aten operator with its shapes, and the tensors saved for backward.

The model is built on the meta device and re-materialised as fake CPU tensors (shapes and
dtypes, no storage), so CPU autocast applies exactly as in a real run and nothing is computed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import torch
from torch._ops import OpOverload
from torch._subclasses.fake_tensor import FakeTensorMode

from perdollar.errors import PerdollarError
from perdollar.profile import operators
from perdollar.profile.liveness import LiveMemory, PeakSnapshot
from perdollar.profile.model import OperatorClass, OperatorRecord, Phase
from perdollar.profile.recurrent import fuse_recurrent_layers
from perdollar.sandbox import UserCodeFailed, described, status_of, user_frame
from perdollar.workload.spec import Workload
from perdollar.workload.step import StepRunner, build_model, build_step, make_optimizer, parameter_dtype

# An operator record's name, phase, class, dtype, argument shapes and GEMM (m, n, k).
_RecordKey = tuple[str, Phase, OperatorClass, str, str, tuple[int, int, int] | None]


@dataclass
class _Group:
    record_key: _RecordKey
    count: int = 0
    flops: float = 0.0
    bytes_read: float = 0.0
    bytes_written: float = 0.0


@dataclass
class TraceResult:
    operators: tuple[OperatorRecord, ...]
    unclassified: tuple[str, ...]
    runner: StepRunner
    batch: object  # what the workload's input factory made, in the policy's dtype
    # Memory: the peak of forward+backward (before any optimizer state exists) and of the
    # optimizer step, and the serials of the storages that hold each part.
    passes_peak: PeakSnapshot
    optimizer_peak: PeakSnapshot | None
    weight_serials: set[int] = field(default_factory=set)
    gradient_serials: set[int] = field(default_factory=set)
    saved_serials: set[int] = field(default_factory=set)
    optimizer_serials: set[int] = field(default_factory=set)
    optimizer_state_bytes: float = 0.0
    # The flat stand-ins for the weights during the optimizer step (the real weights stay live).
    flat_weight_serials: set[int] = field(default_factory=set)


@dataclass
class _OperatorRecorder:
    """Folds every operator call into a record per (name, phase, class, dtype, shape)."""

    tf32: bool = False
    phase: Phase | None = None
    groups: dict[_RecordKey, _Group] = field(default_factory=dict)
    unclassified: set[str] = field(default_factory=set)

    def record(
        self, func: OpOverload, args: Sequence[object], kwargs: Mapping[str, object], out: object
    ) -> None:
        phase = self.phase
        name = operators.packet_name(func)
        if phase is None or operators.is_bookkeeping(func, name):
            return  # between phases nothing is recorded
        op_class = "optimizer" if phase == "optimizer" else operators.classify(func, name)
        if op_class == "unclassified":
            self.unclassified.add(name)
        inputs = operators.tensors_in(list(args) + list(kwargs.values()))
        outputs = operators.tensors_in(out)
        if not outputs and name.endswith("_") and args:
            outputs = operators.tensors_in(args[0])  # in-place multi-tensor ops return nothing
        float_tensors = [t for t in inputs + outputs if t.is_floating_point()]
        dtype = operators.dtype_name(float_tensors[0].dtype) if float_tensors else "fp32"
        compute_class = operators.classify(func, name) if op_class == "optimizer" else op_class
        if self.tf32 and dtype == "fp32" and compute_class in ("matmul", "conv", "attention", "recurrent"):
            dtype = "tf32"
        flops = operators.operator_flops(func, name, compute_class, args, kwargs, out, outputs)
        written = float(sum(operators.tensor_bytes(t) for t in outputs))
        read = float(sum(operators.tensor_bytes(t) for t in inputs))
        mnk = operators.gemm_mnk(name, compute_class, args)
        shape = operators.shape_text(args)
        key = (name, phase, op_class, dtype, shape, mnk)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = _Group(key)
        group.count += 1
        group.flops += flops
        group.bytes_read += read
        group.bytes_written += written

    def records(self) -> tuple[OperatorRecord, ...]:
        return tuple(
            OperatorRecord(
                name=name,
                op_class=op_class,
                phase=phase,
                flops=g.flops,
                bytes_read=g.bytes_read,
                bytes_written=g.bytes_written,
                dtype=dtype,
                count=g.count,
                shape=shape,
                gemm_mnk=mnk,
            )
            for (name, phase, op_class, dtype, shape, mnk), g in self.groups.items()
        )


class _RecordingFakeMode(FakeTensorMode):
    """Fake tensors that report each top-level operator to a recorder.

    Recording inside the fake mode (rather than in a second mode stacked above it) saves one
    Python dispatch layer per operator; ``depth`` keeps the operators that the fake mode
    decomposes internally from being counted twice.
    """

    def __init__(self, recorder: _OperatorRecorder) -> None:
        super().__init__(allow_non_fake_inputs=True)
        self.recorder = recorder
        self.live = LiveMemory()
        self.depth = 0

    def __torch_dispatch__(
        self,
        func: OpOverload,
        types: Sequence[type],
        args: Sequence[object] = (),
        kwargs: Mapping[str, object] | None = None,
    ) -> object:
        self.depth += 1
        try:
            out = super().__torch_dispatch__(func, types, args, kwargs or {})
        finally:
            self.depth -= 1
        if self.depth == 0:
            for tensor in operators.tensors_in(out):
                self.live.track(tensor)
            if self.recorder.phase is not None:
                self.recorder.record(func, args, kwargs or {}, out)
        return out


class _SavedTensors:
    """The storages autograd keeps for the backward pass (the activation memory)."""

    def __init__(self, live: LiveMemory) -> None:
        self.live = live
        self.serials: set[int] = set()

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        self.serials.add(self.live.serial_of(tensor))
        return tensor

    @staticmethod
    def unpack(tensor: torch.Tensor) -> torch.Tensor:
        return tensor


Model = TypeVar("Model", bound=torch.nn.Module)


def _materialise_fake(model: Model, fake_mode: FakeTensorMode, float_dtype: torch.dtype) -> Model:
    """Replace every parameter and buffer with a fake CPU tensor of the same shape (ties kept).

    Floating-point tensors take ``float_dtype`` (the precision policy's storage dtype) here, so
    that no later ``.to(dtype)`` has to swap fake parameters.
    """
    replaced: dict[int, torch.Tensor] = {}

    def dtype_of(tensor: torch.Tensor) -> torch.dtype:
        return float_dtype if tensor.is_floating_point() else tensor.dtype

    for module in model.modules():
        for name, param in list(module._parameters.items()):
            if param is None:
                continue
            if id(param) not in replaced:
                with fake_mode:
                    data = torch.empty(param.shape, dtype=dtype_of(param), device="cpu")
                replaced[id(param)] = torch.nn.Parameter(data, requires_grad=param.requires_grad)
            module._parameters[name] = replaced[id(param)]  # type: ignore[assignment]
        for name, buffer in list(module._buffers.items()):
            if buffer is None:
                continue
            if id(buffer) not in replaced:
                with fake_mode:
                    replaced[id(buffer)] = torch.zeros(buffer.shape, dtype=dtype_of(buffer), device="cpu")
            module._buffers[name] = replaced[id(buffer)]
    return model


def build_fake_model(workload: Workload, fake_mode: FakeTensorMode) -> torch.nn.Module:
    """The workload's model with no storage: built on the meta device, then made fake."""
    try:
        with torch.device("meta"):
            model = build_model(workload)
    except PerdollarError:
        # Some factories read values while building (a checkpoint, ``.item()``): build for real.
        model = build_model(workload)
    return _materialise_fake(model, fake_mode, parameter_dtype(workload.precision))


class _FlatParameters(torch.nn.Module):
    """One flat parameter (with its gradient) per dtype, as many elements as the model trains.

    The optimizer step is elementwise, so stepping these moves the same bytes and does the same
    FLOPs as stepping every parameter with multi-tensor kernels, and allocates the same state and
    temporaries, in a handful of operator calls instead of several per parameter.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        sizes: dict[torch.dtype, int] = {}
        for param in model.parameters():
            if param.requires_grad:
                sizes[param.dtype] = sizes.get(param.dtype, 0) + param.numel()
        self.flat = torch.nn.ParameterList(
            torch.nn.Parameter(torch.empty(n, dtype=d)) for d, n in sizes.items()
        )
        for param in self.flat:
            param.grad = torch.empty(param.numel(), dtype=param.dtype)


@contextlib.contextmanager
def _phase(recorder: _OperatorRecorder, phase: Phase | None) -> Iterator[None]:
    """Record operators as ``phase`` (None: not at all) inside the block, then as before it."""
    before, recorder.phase = recorder.phase, phase
    try:
        yield
    finally:
        recorder.phase = before


def trace_step(workload: Workload) -> TraceResult:
    """Run one step of ``workload`` on fake tensors and record what every operator does."""
    recorder = _OperatorRecorder(tf32=workload.precision == "tf32")
    fake_mode = _RecordingFakeMode(recorder)
    model = build_fake_model(workload, fake_mode)
    fuse_recurrent_layers(model, recorder.record, lambda: _phase(recorder, None))
    with fake_mode:
        runner = build_step(workload, "cpu", model=model, use_grad_scaler=False, foreach=True)
    live = fake_mode.live
    weights = {live.track(t) for t in list(runner.model.parameters()) + list(runner.model.buffers())}
    saved = _SavedTensors(live)
    gradients: set[int] = set()
    optimizer_peak = None
    state: list[torch.Tensor] = []
    proxies: set[int] = set()
    try:
        with fake_mode:
            batch = runner.make_batch()
            live.restart_peak()
            if workload.kind == "inference":
                with torch.no_grad(), _phase(recorder, "forward"):
                    runner.forward(batch)
            else:
                runner.zero_grad()
                with (
                    torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack),
                    _phase(recorder, "forward"),
                ):
                    loss = runner.loss(batch)
                with _phase(recorder, "backward"):
                    runner.backward(loss)
                del loss
                gradients = {live.serial_of(p.grad) for p in runner.model.parameters() if p.grad is not None}
            passes_peak = live.snapshot()
            if runner.optimizer is not None:
                flat = _FlatParameters(runner.model)
                optimizer = make_optimizer(workload, flat, foreach=True)
                assert optimizer is not None
                proxies = {live.serial_of(p) for p in flat.parameters()}
                gradients |= {live.serial_of(p.grad) for p in flat.parameters() if p.grad is not None}
                runner.zero_grad()  # the flat gradients stand in for these from here on
                # The first step creates the optimizer state; the steady state is the second.
                optimizer.step()
                live.restart_peak()
                with _phase(recorder, "optimizer"):
                    optimizer.step()
                optimizer_peak = live.snapshot()
                state = [
                    v for st in optimizer.state.values() for v in st.values() if isinstance(v, torch.Tensor)
                ]
    except PerdollarError:
        raise
    except Exception as error:  # a user model can fail in any way while tracing
        raise UserCodeFailed(
            status_of(error),
            f"tracing one step of workload {workload.name!r}",
            described(error),
            user_frame(error),
        ) from error
    return TraceResult(
        operators=recorder.records(),
        unclassified=tuple(sorted(recorder.unclassified)),
        runner=runner,
        batch=batch,
        passes_peak=passes_peak,
        optimizer_peak=optimizer_peak,
        weight_serials=weights,
        gradient_serials=gradients,
        saved_serials=saved.serials - weights,
        optimizer_serials={live.serial_of(t) for t in state},
        optimizer_state_bytes=float(sum(t.untyped_storage().nbytes() for t in state)),
        flat_weight_serials=proxies,
    )
