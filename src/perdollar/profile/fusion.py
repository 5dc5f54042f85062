"""Which saved activations a training framework that fuses elementwise chains still keeps.

A model's eager code runs one kernel per operator, and autograd saves the intermediate results
of every elementwise chain (a tanh-approximated GELU keeps five of them). Frameworks that train
language models at scale fuse such chains into one kernel that recomputes its intermediates in
backward, so what stays saved is what the large kernels need: the inputs of GEMMs, attention,
normalization, embedding and loss, and whatever those kernels produce. :class:`DataflowFakeMode`
notes, during the forward pass, which storages elementwise, copy and reduction operators made and
which storages the large kernels read; :meth:`DataflowFakeMode.kept_after_fusion` applies that.
It also notes what matrix products and attention made, which is what selective activation
checkpointing keeps (:meth:`DataflowFakeMode.kept_by_selective_checkpointing`).

The same dataflow says how much memory traffic fusion leaves (:meth:`DataflowFakeMode.
fused_chain_bytes` against :attr:`DataflowFakeMode.chain_eager_bytes`): a fused chain of
elementwise, copy, reduction and normalization operators reads each tensor that enters it from
outside once and writes only the tensors that leave it for a large kernel, where the eager code
reads and writes every intermediate. The forward's share stands for the backward's too (a fused
chain's backward reads the same inputs and the incoming gradient, and writes the gradients of
its inputs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from torch._ops import OpOverload

from perdollar.profile import operators
from perdollar.profile.tracer import _OperatorRecorder, _RecordingFakeMode

# Operators whose chains fuse into one kernel; normalization stays a kernel of its own (a fused
# layer norm still saves its input).
FUSED_CLASSES = frozenset({"elementwise", "copy", "reduction"})
# For memory traffic a normalization joins its neighbours' chain too (fused residual add + norm).
CHAIN_CLASSES = FUSED_CLASSES | {"normalization"}


class DataflowFakeMode(_RecordingFakeMode):
    """A recording fake mode that also notes the forward dataflow between fusible and large kernels."""

    def __init__(self, recorder: _OperatorRecorder) -> None:
        super().__init__(recorder)
        self.made_by_fused: set[int] = set()
        self.read_by_kernel: set[int] = set()
        self.made_by_matmul: set[int] = set()
        self.made_by_attention: set[int] = set()
        self.read_by_chain: dict[int, int] = {}  # storage → bytes, inputs of chain operators
        self.made_by_chain: dict[int, int] = {}  # storage → bytes, outputs of chain operators
        self.chain_eager_bytes = 0.0  # what the chain operators read and write, one kernel each

    def __torch_dispatch__(
        self,
        func: OpOverload,
        types: Sequence[type],
        args: Sequence[object] = (),
        kwargs: Mapping[str, object] | None = None,
    ) -> object:
        outermost = self.depth == 0
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if outermost and self.recorder.phase == "forward":
            self._note(func, args, kwargs or {}, out)
        return out

    def _note(
        self, func: OpOverload, args: Sequence[object], kwargs: Mapping[str, object], out: object
    ) -> None:
        name = operators.packet_name(func)
        if operators.is_bookkeeping(func, name):
            return
        op_class = operators.classify(func, name)
        made = {self.live.serial_of(t) for t in operators.tensors_in(out)}
        if op_class == "matmul":
            self.made_by_matmul |= made
        elif op_class == "attention":
            self.made_by_attention |= made
        inputs = operators.tensors_in(list(args) + list(kwargs.values()))
        if op_class in FUSED_CLASSES:
            self.made_by_fused |= made
        if op_class in CHAIN_CLASSES:
            outputs = operators.tensors_in(out)
            self.chain_eager_bytes += sum(operators.tensor_bytes(t) for t in inputs + outputs)
            for tensor in inputs:
                self.read_by_chain.setdefault(self.live.serial_of(tensor), operators.tensor_bytes(tensor))
            for tensor in outputs:
                self.made_by_chain[self.live.serial_of(tensor)] = operators.tensor_bytes(tensor)
        else:
            self.read_by_kernel.update(self.live.serial_of(t) for t in inputs)

    def fused_chain_bytes(self) -> float:
        """Bytes the forward's chains move once fused (compare :attr:`chain_eager_bytes`).

        A chain reads what no chain operator made (GEMM and attention outputs, weights, the
        input) once, and writes what a large kernel reads next; the rest stays in registers.
        """
        reads = sum(size for serial, size in self.read_by_chain.items() if serial not in self.made_by_chain)
        writes = sum(size for serial, size in self.made_by_chain.items() if serial in self.read_by_kernel)
        return float(min(reads + writes, self.chain_eager_bytes))

    def kept_after_fusion(self, saved: set[int]) -> set[int]:
        """The saved storages a fused implementation keeps as well."""
        return {s for s in saved if s not in self.made_by_fused or s in self.read_by_kernel}

    def kept_by_selective_checkpointing(self, saved: set[int], size: dict[int, int]) -> float:
        """Bytes PyTorch's per-operator selective checkpointing keeps (torchtitan's "op" policy):
        attention's outputs and every other matrix product's; the rest is recomputed in backward."""
        attention = sum(size[s] for s in saved if s in self.made_by_attention)
        matmul = sum(size[s] for s in saved if s in self.made_by_matmul and s not in self.made_by_attention)
        return attention + 0.5 * matmul
