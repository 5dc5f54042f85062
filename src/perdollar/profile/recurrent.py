"""Recurrent layers traced as the fused kernels a GPU runs: one record per layer and direction.

On the CPU that traces a step, PyTorch runs an LSTM through oneDNN only where that CPU supports
the dtype (half precision also needs autograd off); otherwise it unrolls the layer into a matrix
product and a handful of elementwise kernels per time step. cuDNN runs each layer as one fused
kernel on every GPU. So that a profile does not depend on the CPU that traced it, ``nn.LSTM`` and
``nn.GRU`` modules are traced as cuDNN runs them: the layer's GEMMs and its input, weights and
output, forward and backward.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence

import torch
from torch import nn
from torch._ops import OpOverload
from torch.autograd.function import FunctionCtx
from torch.nn.utils.rnn import PackedSequence

# Recorded under the name of PyTorch's own fused layer (oneDNN's), whose FLOPs and GEMM shape the
# profile already counts; the predictor times it as a recurrent GEMM on whatever device.
FORWARD = torch.ops.aten.mkldnn_rnn_layer.default
BACKWARD = torch.ops.aten.mkldnn_rnn_layer_backward.default
GATES = {nn.LSTM: 4, nn.GRU: 3}

Record = Callable[[OpOverload, Sequence[object], Mapping[str, object], object], None]
Paused = Callable[[], contextlib.AbstractContextManager[None]]
# One layer and direction: its input, input-hidden and hidden-hidden weights, and output.
LayerTensors = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
HiddenState = torch.Tensor | tuple[torch.Tensor, ...]


def fuse_recurrent_layers(model: nn.Module, record: Record, paused: Paused) -> None:
    """Make every plain LSTM/GRU of ``model`` trace as fused layers (in place, for the trace only)."""
    for module in model.modules():
        if isinstance(module, nn.RNNBase) and type(module) in GATES and not getattr(module, "proj_size", 0):
            module.forward = _fused_forward(module, record, paused)


def _fused_forward(
    module: nn.RNNBase, record: Record, paused: Paused
) -> Callable[..., tuple[object, object]]:
    def forward(input: torch.Tensor | PackedSequence, hx: HiddenState | None = None) -> tuple[object, object]:
        if isinstance(input, PackedSequence):
            return type(module).forward(module, input, hx)
        states = () if hx is None else (hx if isinstance(hx, tuple) else (hx,))
        weights = module._flat_weights
        output, *final = _FusedLayers.apply(module, record, paused, len(states), input, *states, *weights)
        return output, (tuple(final) if isinstance(module, nn.LSTM) else final[0])

    return forward


class _LayersContext(FunctionCtx):
    """Autograd's context as the forward leaves it for the backward (declared for the type checker)."""

    record: Record
    paused: Paused
    layers: list[LayerTensors]
    grad_templates: tuple[torch.Tensor, ...]
    needs_input_grad: tuple[bool, ...]


class _FusedLayers(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: _LayersContext,
        module: nn.RNNBase,
        record: Record,
        paused: Paused,
        n_states: int,
        input: torch.Tensor,
        *tensors: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        states = tensors[:n_states]
        hx = None if not states else (tuple(states) if isinstance(module, nn.LSTM) else states[0])
        with paused():  # only the shapes and dtypes of the outputs are wanted from the real forward
            output, final = type(module).forward(module, input, hx)
            final = final if isinstance(final, tuple) else (final,)
            layers = _layer_tensors(module, input, output)
            reserve = torch.empty(  # cuDNN keeps every step's gate activations for the backward pass
                sum(t[3].numel() for t in layers) * GATES[type(module)], dtype=output.dtype
            )
        for layer_input, w_ih, w_hh, layer_output in layers:
            record(FORWARD, (layer_input, w_ih, w_hh), {}, layer_output)
        ctx.record, ctx.paused, ctx.layers = record, paused, layers
        ctx.grad_templates = (input, *tensors)
        ctx.save_for_backward(input, output, reserve)
        return (output, *final)

    @staticmethod
    def backward(ctx: _LayersContext, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        with ctx.paused():
            written = [tuple(torch.empty_like(t) for t in layer[:3]) for layer in ctx.layers]
            tensor_grads = [
                torch.zeros_like(t) if need else None
                for t, need in zip(ctx.grad_templates, ctx.needs_input_grad[4:], strict=True)
            ]
        for (layer_input, w_ih, w_hh, _), gradients in zip(ctx.layers, written, strict=True):
            ctx.record(BACKWARD, (layer_input, w_ih, w_hh), {}, gradients)
        return (None, None, None, None, *tensor_grads)


def _layer_tensors(module: nn.RNNBase, input: torch.Tensor, output: torch.Tensor) -> list[LayerTensors]:
    """(input, w_ih, w_hh, output) stand-ins of every layer and direction, in the compute dtype."""
    directions = 2 if module.bidirectional else 1
    tokens = input.numel() // input.shape[-1]
    device = input.device.type
    # cuDNN computes in the autocast dtype; CPU autocast leaves some recurrent cells (GRU) in fp32
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else output.dtype
    gates = GATES[type(module)] * module.hidden_size
    layers: list[LayerTensors] = []
    for layer in range(module.num_layers):
        width = module.input_size if layer == 0 else module.hidden_size * directions
        for _ in range(directions):
            layers.append(
                (
                    torch.empty(tokens, width, dtype=dtype),
                    torch.empty(gates, width, dtype=dtype),
                    torch.empty(gates, module.hidden_size, dtype=dtype),
                    torch.empty(tokens, module.hidden_size, dtype=dtype),
                )
            )
    return layers
