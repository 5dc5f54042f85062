"""One training (or inference) step, run the same way by the harness and the profiler.

The precision policy, optimizer, loss and input handling live here so that a measured step
and a traced step are the same computation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from perdollar.errors import PerdollarError
from perdollar.workload.spec import PRECISIONS, Workload

# Batch keys that hold targets: dropped for inference, passed to Hugging Face models for training.
TARGET_KEYS = frozenset({"labels", "start_positions", "end_positions", "next_sentence_label", "targets"})

_AUTOCAST_DTYPES = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}
_PURE_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise PerdollarError(
            f"unknown precision {precision!r}",
            f"use one of {', '.join(PRECISIONS)}",
        )
    return precision


def parameter_dtype(precision: str) -> torch.dtype:
    """Dtype the weights are stored in: fp32 master weights unless the policy is pure low precision."""
    return _PURE_DTYPES.get(precision, torch.float32)


def autocast_dtype(precision: str) -> torch.dtype | None:
    return _AUTOCAST_DTYPES.get(precision)


def build_model(workload: Workload) -> torch.nn.Module:
    """Call the workload's model factory, turning any failure into a one-line error."""
    try:
        model = workload.model_factory()
    except PerdollarError:
        raise
    except Exception as error:  # a user's factory can fail in any way
        raise PerdollarError(
            f"the model of workload {workload.name!r} failed to build: {type(error).__name__}: {error}",
            "fix the model factory (run it in Python to see the full traceback, or pass --debug)",
        ) from error
    if not isinstance(model, torch.nn.Module):
        raise PerdollarError(
            f"the model factory of workload {workload.name!r} returned {type(model).__name__}, "
            "not a torch.nn.Module",
            "make model_factory() return the nn.Module to train",
        )
    return model


def make_optimizer(
    workload: Workload, model: torch.nn.Module, *, foreach: bool | None = None
) -> torch.optim.Optimizer | None:
    """The workload's optimizer; ``foreach=None`` lets PyTorch pick (multi-tensor on GPUs)."""
    if workload.kind != "train":
        return None
    params = [p for p in model.parameters() if p.requires_grad]
    name = workload.optimizer.lower()
    if name == "adam":
        return torch.optim.Adam(params, lr=workload.learning_rate, foreach=foreach)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=workload.learning_rate, foreach=foreach)
    if name == "sgd":
        return torch.optim.SGD(params, lr=workload.learning_rate, momentum=0.9, foreach=foreach)
    raise PerdollarError(f"unknown optimizer {workload.optimizer!r}", "use adam, adamw or sgd")


def _cast_floats(batch: object, dtype: torch.dtype) -> object:
    if isinstance(batch, torch.Tensor):
        return batch.to(dtype) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: _cast_floats(value, dtype) for key, value in batch.items()}
    if isinstance(batch, tuple | list):
        return type(batch)(_cast_floats(value, dtype) for value in batch)
    return batch


def default_loss(outputs: object, batch: object) -> torch.Tensor:
    """The model's own loss (Hugging Face style), or cross-entropy against the last batch element."""
    loss = getattr(outputs, "loss", None)
    if loss is None and isinstance(outputs, dict):
        loss = outputs.get("loss")
    if loss is not None:
        if not isinstance(loss, torch.Tensor):
            raise PerdollarError(
                f"the model's output holds a loss of type {type(loss).__name__}, not a tensor",
                "return the loss as a scalar tensor, or give the Workload a loss_fn(outputs, batch)",
            )
        return loss
    if isinstance(outputs, torch.Tensor):
        if outputs.dim() == 0:
            return outputs
        if isinstance(batch, tuple | list) and len(batch) > 1:
            return torch.nn.functional.cross_entropy(outputs.float(), batch[-1])
    raise PerdollarError(
        "cannot find a loss in the model's output",
        "give the Workload a loss_fn(outputs, batch), or return the loss from the model",
    )


@dataclass
class StepRunner:
    """A model, its optimizer and the precision policy on one device.

    ``run(batch)`` is one full step; the profiler calls its parts (``forward``, ``backward``,
    ``optimizer_step``) separately to tell the phases apart.
    """

    workload: Workload
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer | None
    device: torch.device
    grad_scaler: torch.amp.GradScaler | None = None
    _autocast: torch.dtype | None = field(default=None, repr=False)

    def make_batch(self) -> object:
        """A synthetic batch, already on the device and in the policy's input dtype."""
        batch = self.workload.input_factory(self.workload.batch_size, self.device)
        pure = _PURE_DTYPES.get(self.workload.precision)
        return _cast_floats(batch, pure) if pure is not None else batch

    @contextlib.contextmanager
    def precision_context(self) -> Iterator[None]:
        if self._autocast is None:
            yield
            return
        with torch.autocast(device_type=self.device.type, dtype=self._autocast):
            yield

    def _call_model(self, batch: object) -> object:
        inference = self.workload.kind == "inference"
        if isinstance(batch, dict):
            inputs = {k: v for k, v in batch.items() if not (inference and k in TARGET_KEYS)}
            return self.model(**inputs)
        if isinstance(batch, tuple | list):
            # The last element holds the targets when there is more than one.
            return self.model(*batch[:-1]) if len(batch) > 1 else self.model(batch[0])
        return self.model(batch)

    def forward(self, batch: object) -> object:
        """Forward pass under the precision policy: the loss (train) or the outputs (inference)."""
        if self.workload.kind == "inference":
            with self.precision_context():
                return self._call_model(batch)
        return self.loss(batch)

    def loss(self, batch: object) -> torch.Tensor:
        """A training forward pass under the precision policy: the loss."""
        with self.precision_context():
            outputs = self._call_model(batch)
            loss_fn = self.workload.loss_fn or default_loss
            return loss_fn(outputs, batch)

    def backward(self, loss: torch.Tensor) -> None:
        if self.grad_scaler is not None:
            self.grad_scaler.scale(loss).backward()
        else:
            loss.backward()

    def optimizer_step(self) -> None:
        if self.optimizer is None:
            return
        if self.grad_scaler is not None:
            self.grad_scaler.step(self.optimizer)
            self.grad_scaler.update()
        else:
            self.optimizer.step()

    def zero_grad(self) -> None:
        if self.optimizer is not None:
            self.optimizer.zero_grad(set_to_none=True)

    def run(self, batch: object) -> object:
        """One step: forward+backward+optimizer (train) or one forward pass (inference)."""
        if self.workload.kind == "inference":
            with torch.no_grad():
                return self.forward(batch)
        self.zero_grad()
        loss = self.loss(batch)
        self.backward(loss)
        self.optimizer_step()
        return loss


def _apply_matmul_policy(precision: str, device: torch.device) -> None:
    # TF32 only exists on NVIDIA GPUs; "fp32" must switch it off there (PyTorch enables it for cuDNN).
    if device.type == "cuda":
        tf32 = precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32


def resolve_device(device: str | torch.device) -> torch.device:
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except RuntimeError as error:
        raise PerdollarError(f"unknown device {device!r}", "use auto, cpu, cuda or cuda:N") from error


def build_step(
    workload: Workload,
    device: str | torch.device = "cpu",
    *,
    model: torch.nn.Module | None = None,
    use_grad_scaler: bool = True,
    foreach: bool | None = None,
) -> StepRunner:
    """Build the model (unless given), move it to ``device`` and set up the precision policy.

    ``use_grad_scaler`` adds dynamic loss scaling for ``amp-fp16`` training, as a real fp16 run
    needs; the profiler turns it off because its inf checks read tensor values.
    """
    check_precision(workload.precision)
    target = resolve_device(device)
    if workload.config.get("profile_only") and target.type != "meta" and model is None:
        raise PerdollarError(
            f"workload {workload.name!r} is too large to run here; it can only be profiled",
            f"use `perdollar profile {workload.name}` (meta device, nothing is materialised)",
        )
    if model is None:
        model = build_model(workload).to(target)
    pure = _PURE_DTYPES.get(workload.precision)
    if pure is not None and any(p.is_floating_point() and p.dtype != pure for p in model.parameters()):
        model = model.to(pure)
    if workload.kind == "inference":
        model.eval()
    else:
        model.train()
    _apply_matmul_policy(workload.precision, target)
    scaler = None
    if use_grad_scaler and workload.precision == "amp-fp16" and workload.kind == "train":
        scaler = torch.amp.GradScaler(target.type)
    return StepRunner(
        workload=workload,
        model=model,
        optimizer=make_optimizer(workload, model, foreach=foreach),
        device=target,
        grad_scaler=scaler,
        _autocast=autocast_dtype(workload.precision),
    )
