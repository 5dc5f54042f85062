"""Every reference workload profiles cleanly: no unknown operators, a train step ≈ 3× its forward."""

from __future__ import annotations

import pytest

from perdollar.profile import profile_workload
from perdollar.profile.summary import forward_flops_per_sample
from perdollar.workload import load_workload

# vit-b16, resnet50 and llama-8b are checked against published counts elsewhere.
NAMES = ("mlp", "resnet152", "vgg16", "inception-v3", "bert-base", "bert-large", "gpt2", "gnmt", "ncf")

# Published parameter counts (torchvision / Hugging Face model cards; Inception v3 without its
# auxiliary head; GNMT and NCF as sized here).
PARAMS_MILLIONS = {
    "resnet152": 60.19,
    "vgg16": 138.36,
    "inception-v3": 23.83,
    "bert-base": 108.9,
    "bert-large": 334.1,
    "gpt2": 124.4,
}


@pytest.mark.parametrize("name", NAMES)
def test_reference_profiles_cleanly(name: str) -> None:
    profile = profile_workload(load_workload(name, batch_size=1))
    assert profile.unclassified_ops == ()
    forward = forward_flops_per_sample(profile)
    assert forward > 0
    # Backward costs about twice the forward (the first layer needs no input gradient). The
    # optimizer's FLOPs scale with parameters, not samples, so they are left out at batch 1.
    passes = sum(op.flops for op in profile.operators if op.phase != "optimizer") / profile.batch_size
    assert 2.8 <= passes / forward <= 3.2
    assert {op.phase for op in profile.operators} == {"forward", "backward", "optimizer"}
    assert profile.memory.total > profile.memory.weights > 0
    if name in PARAMS_MILLIONS:
        assert profile.params / 1e6 == pytest.approx(PARAMS_MILLIONS[name], rel=0.005)
