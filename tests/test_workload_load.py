"""Loading workloads: built-in names, user files, overrides, fingerprints and bad input."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from perdollar.errors import PerdollarError
from perdollar.workload import (
    PRECISIONS,
    Workload,
    load_workload,
    reference_for_published_model,
    reference_names,
)
from perdollar.workload.step import build_step

USER_FILE = """
import torch
from perdollar.workload import Workload


def make_batch(batch_size, device):
    return torch.randn(batch_size, 32, device=device), torch.randint(0, 4, (batch_size,), device=device)


def build():
    return Workload(
        name="tiny-user-model",
        model_factory=lambda: torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)
        ),
        input_factory=make_batch,
        batch_size=16,
        optimizer="sgd",
    )


def not_a_workload():
    return 42


def broken_model():
    def factory():
        raise ValueError("layer sizes do not match")
    return Workload(name="broken", model_factory=factory, input_factory=make_batch, batch_size=4)


def raises():
    raise RuntimeError("no config file")
"""


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_model.py"
    path.write_text(textwrap.dedent(USER_FILE))
    return path


def test_every_reference_loads_with_its_defaults() -> None:
    names = reference_names()
    for required in (
        "mlp",
        "vit-b16",
        "resnet50",
        "resnet152",
        "vgg16",
        "inception-v3",
        "bert-base",
        "bert-large",
        "gpt2",
        "llama-8b",
        "gnmt",
        "ncf",
    ):
        assert required in names
    vit = load_workload("vit-b16")
    assert (vit.batch_size, vit.precision, vit.optimizer, vit.sample_unit) == (
        128,
        "amp-bf16",
        "adam",
        "images",
    )
    for name in names:
        workload = load_workload(name)
        assert workload.batch_size >= 1 and workload.precision in PRECISIONS and workload.sample_unit


def test_overrides_change_the_fingerprint() -> None:
    base = load_workload("resnet50")
    assert load_workload("resnet50").fingerprint == base.fingerprint
    smaller = load_workload("resnet50", batch_size=32)
    assert smaller.batch_size == 32 and smaller.fingerprint != base.fingerprint
    bf16 = load_workload("resnet50", precision="amp-bf16")
    assert bf16.precision == "amp-bf16" and bf16.fingerprint != base.fingerprint
    serving = load_workload("resnet50", kind="inference")
    assert serving.kind == "inference" and serving.fingerprint != base.fingerprint


def test_aliases_and_near_misses() -> None:
    assert load_workload("ResNet-50").name == "resnet50"
    with pytest.raises(PerdollarError, match="did you mean 'resnet50'"):
        load_workload("resnet5")


def test_user_file_loads_and_its_step_runs(user_file: Path) -> None:
    workload = load_workload(f"{user_file}:build", batch_size=8)
    assert workload.name == "tiny-user-model" and workload.batch_size == 8
    assert "source_sha256" in workload.config
    runner = build_step(workload, "cpu")
    before = [p.detach().clone() for p in runner.model.parameters()]
    loss = runner.run(runner.make_batch())
    assert torch.isfinite(loss)
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, runner.model.parameters(), strict=True))


def test_user_file_contents_enter_the_fingerprint(user_file: Path) -> None:
    first = load_workload(f"{user_file}:build").fingerprint
    user_file.write_text(
        user_file.read_text()
        .replace("Linear(32, 64)", "Linear(32, 128)")
        .replace("Linear(64, 4)", "Linear(128, 4)")
    )
    assert load_workload(f"{user_file}:build").fingerprint != first


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing_dir/nowhere.py:build", "does not exist"),
        ("{file}:no_such_function", "has no function 'no_such_function'"),
        ("{file}:not_a_workload", "returned int, not a Workload"),
        ("{file}:raises", "RuntimeError: no config file"),
        ("{file}", "does not say which function"),
    ],
)
def test_bad_user_files_are_one_line_errors(user_file: Path, spec: str, message: str) -> None:
    with pytest.raises(PerdollarError, match=message) as caught:
        load_workload(spec.format(file=user_file))
    assert "\n" not in caught.value.one_line()


def test_model_that_fails_to_build_names_the_workload(user_file: Path) -> None:
    workload = load_workload(f"{user_file}:broken_model")
    with pytest.raises(
        PerdollarError, match="'broken' failed to build: ValueError: layer sizes do not match"
    ):
        build_step(workload, "cpu")


def test_unknown_precision_and_bad_batch() -> None:
    with pytest.raises(PerdollarError, match="unknown precision 'fp8'"):
        load_workload("mlp", precision="fp8")
    with pytest.raises(PerdollarError, match="positive integer"):
        load_workload("mlp", batch_size=0)
    custom = Workload(
        name="x",
        model_factory=lambda: torch.nn.Linear(2, 2),
        input_factory=lambda b, d: (torch.randn(b, 2), torch.randn(b, 2)),
        batch_size=2,
        precision="int3",
    )
    with pytest.raises(PerdollarError, match="unknown precision 'int3'"):
        load_workload(custom)


def test_llama_is_profile_only() -> None:
    with pytest.raises(PerdollarError, match="can only be profiled"):
        build_step(load_workload("llama-8b"), "cpu")


@pytest.mark.parametrize("precision", ["fp32", "amp-bf16", "bf16"])
def test_precision_policy_shapes_the_step(precision: str) -> None:
    runner = build_step(load_workload("mlp", batch_size=4, precision=precision), "cpu")
    weight_dtype = next(runner.model.parameters()).dtype
    assert weight_dtype == (torch.bfloat16 if precision == "bf16" else torch.float32)
    logits = runner.model(runner.make_batch()[0]) if precision != "amp-bf16" else None
    if precision == "amp-bf16":
        with runner.precision_context():
            logits = runner.model(runner.make_batch()[0])
        assert logits.dtype == torch.bfloat16  # autocast ran the matmul in bf16 over fp32 weights
    assert torch.isfinite(runner.run(runner.make_batch()).float())


def test_published_model_names_map_to_references(shared_data: Path) -> None:
    import pandas as pd

    assert reference_for_published_model("ResNet-50 v1.5 (NVIDIA DLE)") == "resnet50"
    assert reference_for_published_model("bert-base squad v1.1 fine-tune") == "bert-base"
    assert reference_for_published_model("GPT-2 Large (HF, random init)") is None
    assert reference_for_published_model("Something else") is None
    models = pd.read_csv(shared_data / "measurements" / "published_dev.csv", usecols=["model"])[
        "model"
    ].unique()
    mapped = {m: reference_for_published_model(m) for m in models}
    assert all(ref in reference_names() for ref in mapped.values() if ref is not None)
    # Every reference that the published set measured is reachable from its names.
    assert {
        "resnet50",
        "resnet152",
        "vgg16",
        "inception-v3",
        "bert-base",
        "bert-large",
        "gnmt",
        "ncf",
        "llama-8b",
    } <= set(mapped.values())
