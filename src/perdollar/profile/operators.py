"""Per-operator arithmetic: which class an aten operator belongs to, its FLOPs and bytes moved.

GEMM, convolution and fused-attention FLOPs come from PyTorch's own ``flop_counter`` formulas;
everything else is counted per element of its output (a few FLOPs for transcendental or
normalising operators). A multiply-add counts as 2 FLOPs throughout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torch._ops import OpOverload
from torch.utils.flop_counter import flop_registry

from perdollar.profile import op_tables
from perdollar.profile.model import OperatorClass

aten = torch.ops.aten

_DTYPE_NAMES = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float64: "fp64",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
}


def dtype_name(dtype: torch.dtype) -> str:
    return _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def packet_name(func: OpOverload) -> str:
    """``aten.mm.default`` → ``aten.mm`` (the overload does not change the arithmetic)."""
    return str(func.overloadpacket._qualified_op_name).replace("::", ".")


def is_bookkeeping(func: OpOverload, name: str) -> bool:
    """True for operators that move no bytes: views, metadata, profiler markers, scalar reads."""
    if not name.startswith("aten."):
        return True
    return bool(getattr(func, "is_view", False)) or name in op_tables.IGNORED


def classify(func: OpOverload, name: str) -> OperatorClass:
    known = op_tables.CLASS_BY_NAME.get(name)
    if known is not None:
        return known
    tags = getattr(func, "tags", ())
    if torch.Tag.pointwise in tags or (
        name.endswith("_backward") and name.replace("_backward", "") in op_tables.FLOPS_PER_ELEMENT
    ):
        return "elementwise"
    if name.startswith("aten._foreach_") or name.startswith("aten._fused_"):
        return "elementwise"
    if name in (
        "aten.threshold_backward",
        "aten.native_dropout_backward",
        "aten.where",
        "aten.masked_fill",
        "aten.masked_fill_",
        "aten.gelu_backward",
        "aten.silu_backward",
        "aten.hardtanh_backward",
        "aten.relu",
        "aten.relu_",
        "aten.bernoulli_",
        "aten.native_dropout",
        "aten.clamp_min_",
    ):
        return "elementwise"
    return "unclassified"


def tensors_in(value: object) -> list[torch.Tensor]:
    """Every tensor in a (nested) argument structure, in argument order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [tensor for item in value for tensor in tensors_in(item)]
    if isinstance(value, dict):
        return [tensor for item in value.values() for tensor in tensors_in(item)]
    return []


def tensor_bytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _tensor_at(args: Sequence[object], index: int) -> torch.Tensor:
    """The operator's tensor argument at ``index`` (TypeError, as for a wrong call, when it is not one)."""
    value = args[index]
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"argument {index} of the operator is {type(value).__name__}, not a tensor")
    return value


def _ints_at(args: Sequence[object], index: int) -> list[int]:
    """The operator's list-of-ints argument at ``index`` (a convolution's stride, padding, dilation)."""
    value = args[index]
    if not isinstance(value, list | tuple):
        raise TypeError(f"argument {index} of the operator is {value!r}, not a list of ints")
    ints = [item for item in value if isinstance(item, int)]
    if len(ints) != len(value):
        raise TypeError(f"argument {index} of the operator is {value!r}, not a list of ints")
    return ints


def _lstm_flops(name: str, args: Sequence[object]) -> float:
    """An LSTM layer: 4 gates, each a GEMM over input and hidden state, for every token."""
    inputs, w_ih, w_hh = _tensor_at(args, 0), _tensor_at(args, 1), _tensor_at(args, 2)
    gates, in_width = w_ih.shape[0], w_ih.shape[1]
    tokens = inputs.numel() / in_width
    forward = 2 * tokens * gates * (in_width + w_hh.shape[1]) + 10 * tokens * gates / 4
    return forward * (2 if name.endswith("_backward") else 1)


def _lstm_mnk(args: Sequence[object]) -> tuple[int, int, int]:
    inputs, w_ih, w_hh = _tensor_at(args, 0), _tensor_at(args, 1), _tensor_at(args, 2)
    return (int(inputs.numel() // w_ih.shape[1]), int(w_ih.shape[0]), int(w_ih.shape[1] + w_hh.shape[1]))


# CPU kernels of fused attention share the argument layout of the CUDA flash kernels.
_FORMULA_ALIASES = {
    "aten._scaled_dot_product_flash_attention_for_cpu": aten._scaled_dot_product_flash_attention,
    "aten._scaled_dot_product_flash_attention_for_cpu_backward": (
        aten._scaled_dot_product_flash_attention_backward
    ),
}


def operator_flops(
    func: OpOverload,
    name: str,
    op_class: OperatorClass,
    args: Sequence[object],
    kwargs: Mapping[str, object],
    out: object,
    outputs: Sequence[torch.Tensor],
) -> float:
    """FLOPs of one call; ``outputs`` are the tensors it wrote (for in-place ops, the mutated ones)."""
    packet = _FORMULA_ALIASES.get(name, func.overloadpacket)
    formula = flop_registry.get(packet)
    if formula is not None:
        return float(formula(*args, **kwargs, out_val=out))
    if op_class == "recurrent" and name.startswith("aten.mkldnn_rnn_layer"):
        return _lstm_flops(name, args)
    if op_class in ("copy", "embedding"):
        return 0.0
    if op_class in ("reduction", "loss", "pooling"):
        inputs = tensors_in(args)
        return float(max((t.numel() for t in inputs), default=0))
    per_element = op_tables.FLOPS_PER_ELEMENT.get(name, 1.0)
    return float(per_element * sum(t.numel() for t in outputs if t.is_floating_point()))


def gemm_mnk(name: str, op_class: OperatorClass, args: Sequence[object]) -> tuple[int, int, int] | None:
    """The (m, n, k) of the matrix product an operator lowers to; batch dimensions fold into m."""
    try:
        if name in ("aten.mm",):
            a, b = _tensor_at(args, 0), _tensor_at(args, 1)
            return (int(a.shape[0]), int(b.shape[1]), int(a.shape[1]))
        if name in ("aten.addmm", "aten._addmm_activation"):
            a, b = _tensor_at(args, 1), _tensor_at(args, 2)
            return (int(a.shape[0]), int(b.shape[1]), int(a.shape[1]))
        if name == "aten.bmm":
            a, b = _tensor_at(args, 0), _tensor_at(args, 1)
            return (int(a.shape[0] * a.shape[1]), int(b.shape[2]), int(a.shape[2]))
        if name == "aten.baddbmm":
            a, b = _tensor_at(args, 1), _tensor_at(args, 2)
            return (int(a.shape[0] * a.shape[1]), int(b.shape[2]), int(a.shape[2]))
        if op_class == "conv":
            return _conv_mnk(name, args)
        if name.startswith("aten.mkldnn_rnn_layer"):
            return _lstm_mnk(args)
    except (AttributeError, IndexError, TypeError):
        return None
    return None


def _conv_mnk(name: str, args: Sequence[object]) -> tuple[int, int, int] | None:
    # Implicit GEMM of the forward convolution: m = output pixels, n = output channels,
    # k = input channels per group × kernel area. The backward pass reuses the same shape.
    if name == "aten.convolution_backward":
        grad_out, weight = _tensor_at(args, 0), _tensor_at(args, 2)
        out_shape: Sequence[int] = grad_out.shape
    else:
        weight = _tensor_at(args, 1)
        inputs = _tensor_at(args, 0)
        stride, padding, dilation = _ints_at(args, 3), _ints_at(args, 4), _ints_at(args, 5)
        spatial = []
        for dim, size in enumerate(inputs.shape[2:]):
            kernel = weight.shape[2 + dim]
            spatial.append((size + 2 * padding[dim] - dilation[dim] * (kernel - 1) - 1) // stride[dim] + 1)
        out_shape = (inputs.shape[0], weight.shape[0], *spatial)
    kernel_area = math.prod(int(s) for s in weight.shape[2:])
    pixels = int(out_shape[0]) * math.prod(int(s) for s in out_shape[2:])
    return (pixels, int(weight.shape[0]), int(weight.shape[1]) * kernel_area)


def shape_text(args: Sequence[object]) -> str:
    shapes = ["x".join(str(int(s)) for s in t.shape) or "scalar" for t in tensors_in(list(args))[:3]]
    return " · ".join(shapes)
