"""Collective volumes against their closed forms, and a plan's collectives in its step time."""

from __future__ import annotations

import dataclasses

import pytest

from perdollar import catalog
from perdollar.predict.llm import LLMEfficiency, TrainingPlan, predict_llm_training
from perdollar.predict.llm import collectives as cx
from perdollar.predict.llm.device import micro_batch_times
from perdollar.workload.llm import load_llm_workload


def test_ring_volumes() -> None:
    assert cx.all_reduce_bytes(1000.0, 4) == pytest.approx(1500.0)
    assert cx.all_gather_bytes(1000.0, 4) == pytest.approx(750.0)
    assert cx.all_reduce_bytes(1000.0, 1) == 0.0
    link = cx.Link(bandwidth=100.0, latency=0.01, name="test")
    assert cx.all_reduce_seconds(1000.0, 4, link) == pytest.approx(15.0 + 6 * 0.01)
    assert cx.all_gather_seconds(1000.0, 4, link) == pytest.approx(7.5 + 3 * 0.01)


def test_links_inside_and_between_hosts() -> None:
    nvlink = cx.intra_host_link("NVLink 4", 900.0, 0.7)
    assert nvlink.bandwidth == pytest.approx(450e9 * 0.7) and nvlink.name == "NVLink"
    efa = cx.inter_host_link(3200.0, 32, rdma_efficiency=0.9, tcp_efficiency=0.6)
    assert efa.bandwidth == pytest.approx(400e9 * 0.9) and efa.name == "EFA"
    tcp = cx.inter_host_link(100.0, 0, rdma_efficiency=0.9, tcp_efficiency=0.6)
    assert tcp.bandwidth == pytest.approx(12.5e9 * 0.6)
    assert cx.group_link(True, nvlink, tcp).bandwidth == tcp.bandwidth
    assert cx.group_link(False, nvlink, tcp) is nvlink


@pytest.fixture(scope="module")
def small():
    cat = catalog.load()
    return load_llm_workload("gpt-125m").architecture, cat.accelerators["H100-SXM5-80GB"]


def test_ddp_all_reduce_exposed_without_overlap(small) -> None:
    arch, h100 = small
    eff = LLMEfficiency(communication_overlap=0.0)
    got = predict_llm_training(
        arch,
        h100,
        gpus_per_node=8,
        nodes=1,
        plan=TrainingPlan("ddp", micro_batch=4),
        seq_len=512,
        global_batch=64,
        efficiency=eff,
    )
    link = cx.Link(h100.interconnect_bandwidth_gbps / 2 * 1e9 * 0.7, cx.INTRA_HOST_LATENCY_S, "NVLink")
    gradient_bytes = 2.0 * arch.total_params  # bf16 gradients
    expected = 2 * 7 / 8 * gradient_bytes / link.bandwidth + 2 * 7 * link.latency
    assert got.breakdown_s["exposed gradient all-reduce"] == pytest.approx(expected)
    assert got.plan.gradient_accumulation == 64 // (4 * 8)


def test_fsdp_gathers_weights_twice_and_scatters_gradients_every_micro_batch(small) -> None:
    arch, h100 = small
    eff = LLMEfficiency(communication_overlap=0.0)
    got = predict_llm_training(
        arch,
        h100,
        gpus_per_node=8,
        nodes=1,
        plan=TrainingPlan("fsdp", micro_batch=2),
        seq_len=512,
        global_batch=64,
        efficiency=eff,
    )
    bandwidth = h100.interconnect_bandwidth_gbps / 2 * 1e9 * 0.7
    # Gathered layer by layer: the ring's latency once per layer, the bytes once in all.
    one_gather = 7 / 8 * 2.0 * arch.total_params / bandwidth + arch.num_layers * 7 * cx.INTRA_HOST_LATENCY_S
    micro_batches = 64 // (2 * 8)
    assert got.breakdown_s["exposed weight all-gather"] == pytest.approx(micro_batches * 2 * one_gather)
    assert got.breakdown_s["exposed gradient reduce-scatter"] == pytest.approx(micro_batches * one_gather)


def test_backward_post_waits_for_the_whole_backward_gather(small) -> None:
    """Under BACKWARD_POST the backward's gather (one of the two per micro-batch) is exposed whatever
    the overlap; the forward's gather and the reduce-scatter stay hidden under compute as before."""
    arch, h100 = small

    def predicted(prefetch: str, overlap: float):
        return predict_llm_training(
            arch, h100, gpus_per_node=8, nodes=1,
            plan=TrainingPlan("fsdp", micro_batch=2, backward_prefetch=prefetch), seq_len=512,
            global_batch=64, efficiency=LLMEfficiency(communication_overlap=overlap),
        )  # fmt: skip

    bandwidth = h100.interconnect_bandwidth_gbps / 2 * 1e9 * 0.7
    one_gather = 7 / 8 * 2.0 * arch.total_params / bandwidth + arch.num_layers * 7 * cx.INTRA_HOST_LATENCY_S
    micro_batches = 64 // (2 * 8)
    hidden_post, hidden_pre = predicted("post", 1.0), predicted("pre", 1.0)
    assert "exposed weight all-gather" not in hidden_pre.breakdown_s  # compute hides all of it
    assert hidden_post.breakdown_s["exposed backward weight all-gather"] == pytest.approx(
        micro_batches * one_gather
    )
    assert hidden_post.step_time_s == pytest.approx(hidden_pre.step_time_s + micro_batches * one_gather)
    # With nothing hidden the two prefetches expose the same collectives, only named apart.
    bare_post, bare_pre = predicted("post", 0.0), predicted("pre", 0.0)
    assert bare_post.step_time_s == pytest.approx(bare_pre.step_time_s)
    assert bare_post.breakdown_s["exposed weight all-gather"] == pytest.approx(micro_batches * one_gather)


@pytest.mark.parametrize("strategy", ["ddp", "zero1", "zero2"])
def test_blocking_data_parallelism_exposes_every_collective_whatever_the_overlap(small, strategy) -> None:
    """A +blocking plan's collectives wait for the compute before them (Megatron-LM's own DDP): a
    full overlap hides all of an overlapped plan's and none of a blocking plan's, which then costs
    exactly what it costs with nothing hidden, collective by collective."""
    arch, h100 = small

    def predicted(comm: str, overlap: float):
        return predict_llm_training(
            arch, h100, gpus_per_node=8, nodes=1,
            plan=TrainingPlan(strategy, micro_batch=2, data_parallel_comm=comm), seq_len=512,
            global_batch=64, efficiency=LLMEfficiency(communication_overlap=overlap),
        )  # fmt: skip

    def exposed(prediction) -> dict[str, float]:
        return {k: v for k, v in prediction.breakdown_s.items() if k.startswith("exposed")}

    hidden = predicted("overlapped", 1.0)
    assert not exposed(hidden)  # compute hides every collective of this small model
    blocking, bare = predicted("blocking", 1.0), predicted("overlapped", 0.0)
    assert exposed(blocking) and exposed(blocking) == pytest.approx(exposed(bare))
    assert blocking.step_time_s == pytest.approx(bare.step_time_s)
    assert blocking.step_time_s > hidden.step_time_s


def test_blocking_ddp_waits_for_the_whole_ring_all_reduce_once_a_step(small) -> None:
    arch, h100 = small
    got = predict_llm_training(
        arch, h100, gpus_per_node=8, nodes=1,
        plan=TrainingPlan("ddp", micro_batch=2, data_parallel_comm="blocking"), seq_len=512,
        global_batch=64, efficiency=LLMEfficiency(communication_overlap=1.0),
    )  # fmt: skip
    bandwidth = h100.interconnect_bandwidth_gbps / 2 * 1e9 * 0.7
    expected = 2 * 7 / 8 * 2.0 * arch.total_params / bandwidth + 2 * 7 * cx.INTRA_HOST_LATENCY_S
    assert got.breakdown_s["exposed gradient all-reduce"] == pytest.approx(expected)


def test_hsdp_all_reduces_the_whole_gradient_across_hosts_through_the_network(small) -> None:
    arch, h100 = small
    eff = LLMEfficiency(communication_overlap=0.0)
    got = predict_llm_training(
        arch, h100, gpus_per_node=8, nodes=2, plan=TrainingPlan("hsdp", micro_batch=2), seq_len=512,
        global_batch=64, network_gbps=100.0, efa_interfaces=0, efficiency=eff,
    )  # fmt: skip
    tcp = 100.0 / 8 * 1e9 * 0.6
    expected = 2 * 1 / 2 * 2.0 * arch.total_params / tcp + 2 * 1 * cx.TCP_LATENCY_S
    assert got.breakdown_s["exposed cross-host gradient all-reduce"] == pytest.approx(expected)


def test_tensor_parallel_ranks_share_the_hosts_network_for_their_data_parallel_all_reduces(small) -> None:
    """With TP 2 on two 8-GPU hosts, each host's 2 tensor-parallel ranks all-reduce their gradient
    shards with the other host at once, through the same NICs: each gets half the network."""
    arch, h100 = small
    got = predict_llm_training(
        arch, h100, gpus_per_node=8, nodes=2, plan=TrainingPlan("ddp", tensor_parallel=2, micro_batch=2),
        seq_len=512, global_batch=64, network_gbps=400.0, efa_interfaces=8,
        efficiency=LLMEfficiency(communication_overlap=0.0),
    )  # fmt: skip
    per_rank = 400.0 / 8 * 1e9 * 0.9 / 2  # the host's RDMA rate, halved between its two TP ranks
    dp = 16 // 2
    shard = 2.0 * arch.total_params / 2  # bf16 gradients of one TP rank's half of the model
    expected = 2 * (dp - 1) / dp * shard / per_rank + 2 * (dp - 1) * cx.RDMA_LATENCY_S
    assert got.breakdown_s["exposed gradient all-reduce"] == pytest.approx(expected, rel=1e-6)


def test_tensor_parallel_all_reduces_two_forward_two_backward_per_layer(small) -> None:
    arch, h100 = small
    got = predict_llm_training(
        arch,
        h100,
        gpus_per_node=8,
        nodes=1,
        plan=TrainingPlan("ddp", tensor_parallel=4, micro_batch=2),
        seq_len=512,
        global_batch=16,
        efficiency=LLMEfficiency(tensor_parallel_overlap=0.0),  # every all-reduce on the critical path
    )
    bandwidth = h100.interconnect_bandwidth_gbps / 2 * 1e9 * 0.7
    message = 2 * 512 * arch.hidden_size * 2.0
    per_all_reduce = 2 * 3 / 4 * message / bandwidth + 2 * 3 * cx.INTRA_HOST_LATENCY_S
    micro_batches = 16 // (2 * 2)
    expected = micro_batches * arch.num_layers * 4 * per_all_reduce
    assert got.breakdown_s["tensor-parallel all-reduce"] == pytest.approx(expected)


def test_blocking_tensor_parallelism_hides_none_of_its_all_reduces(small) -> None:
    """The fitted overlap hides a share of an overlapped plan's all-reduces and none of a blocking
    plan's, whose all-reduces cost what they cost with no overlap at all."""
    arch, h100 = small

    def tensor_parallel_seconds(comm: str, overlap: float) -> float:
        got = predict_llm_training(
            arch,
            h100,
            gpus_per_node=8,
            nodes=1,
            plan=TrainingPlan("ddp", tensor_parallel=4, micro_batch=2, tensor_parallel_comm=comm),
            seq_len=512,
            global_batch=16,
            efficiency=LLMEfficiency(tensor_parallel_overlap=overlap),
        )
        return got.breakdown_s["tensor-parallel all-reduce"]

    whole = tensor_parallel_seconds("overlapped", 0.0)
    assert tensor_parallel_seconds("blocking", 0.6) == pytest.approx(whole)
    assert tensor_parallel_seconds("overlapped", 0.6) == pytest.approx(0.4 * whole)


def test_pipeline_bubble_is_p_minus_one_stage_times(small) -> None:
    arch, h100 = small
    plan = TrainingPlan("ddp", pipeline_parallel=2, micro_batch=1)
    got = predict_llm_training(
        arch,
        h100,
        gpus_per_node=1,
        nodes=2,
        plan=plan,
        seq_len=512,
        global_batch=6,
        network_gbps=100.0,
    )
    eff = LLMEfficiency()  # the shipped rates the prediction above used
    times = micro_batch_times(
        arch, h100, micro_batch=1, seq_len=512, precision="amp-bf16", tensor_parallel=1, finetune="full",
        gemm_efficiency=eff.gemm_efficiency, fusion=eff.fusion,
        attention_efficiency=eff.attention_efficiency,
    )  # fmt: skip
    compute = 6 * (
        arch.num_layers // 2 * (times.layer_forward + times.layer_backward)
        + times.other_forward
        + times.other_backward
    )
    stage_time = got.breakdown_s["pipeline bubble"]  # (p − 1) = 1 stage-time
    assert got.step_time_s == pytest.approx((6 + 1) * stage_time + got.breakdown_s.get("optimizer", 0.0))
    assert stage_time > compute / 6  # a stage-time includes its send/receive and framework time


def test_a_slower_interconnect_slows_tensor_parallelism(small) -> None:
    _, h100 = small
    arch = load_llm_workload("gpt-350m").architecture  # 16 heads: eight ranks split them evenly
    pcie = dataclasses.replace(h100, interconnect="PCIe Gen5 x16", interconnect_bandwidth_gbps=128.0)
    plan = TrainingPlan("ddp", tensor_parallel=8, micro_batch=2)
    fast = predict_llm_training(arch, h100, gpus_per_node=8, nodes=1, plan=plan, seq_len=512, global_batch=8)
    slow = predict_llm_training(arch, pcie, gpus_per_node=8, nodes=1, plan=plan, seq_len=512, global_batch=8)
    ratio = slow.breakdown_s["tensor-parallel all-reduce"] / fast.breakdown_s["tensor-parallel all-reduce"]
    volume = 2 * 7 / 8 * (2 * 512 * arch.hidden_size * 2.0)
    latency = 2 * 7 * cx.INTRA_HOST_LATENCY_S

    def seconds(gbps: float) -> float:
        return volume / (gbps / 2 * 1e9 * 0.7) + latency

    assert ratio == pytest.approx(seconds(128.0) / seconds(900.0))
    assert ratio > 1.5
