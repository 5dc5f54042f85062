"""The LLM rows of the development set, predicted by the serving model with the target GPU held out."""

from __future__ import annotations

from pathlib import Path

from perdollar import catalog as catalog_mod
from perdollar.predict.llm_serving.published import load_cases, validation_section


def test_held_out_llamacpp_decode_beats_the_plain_roofline(shared_data: Path) -> None:
    csv = shared_data / "measurements" / "published_dev.csv"
    section = validation_section(csv, catalog_mod.load(), ["RTX 3090"])
    assert section is not None
    decode, roofline = section["held_out"]["decode-batch-1"], section["plain_roofline"]["decode-batch-1"]
    assert decode["n"] == roofline["n"] > 0
    assert decode["median_ape"] < roofline["median_ape"]
    # No TensorRT-LLM row is on an RTX 3090: nothing else is scored.
    assert section["held_out"]["max-throughput"]["n"] == 0


def test_every_llm_row_becomes_a_case_with_its_setting(shared_data: Path) -> None:
    cases, left = load_cases(shared_data / "measurements" / "published_dev.csv", catalog_mod.load())
    assert left["unknown model"] == left["unknown gpu"] == left["unparsed"] == 0
    kinds = {case.kind for case in cases}
    assert kinds == {"max-throughput", "static-batch", "decode-batch-1", "prefill", "ttft"}
    # llama.cpp's multi-GPU rows split layers (pipeline); TensorRT-LLM's state tensor parallel.
    split = [c for c in cases if c.engine == "llama.cpp" and c.shape.gpus > 1]
    assert split and all(c.shape.tensor_parallel == 1 for c in split)
    assert any(c.engine == "tensorrt-llm" and c.shape.tensor_parallel == 8 for c in cases)
