"""Imported measurements: published-schema CSV and bench JSON become calibration anchors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perdollar.errors import PerdollarError
from perdollar.measure.serialize import measurement_to_dict
from perdollar.predict.imports import load_measurements_file


def test_published_csv_rows_become_per_gpu_measurements(tmp_path: Path):
    path = tmp_path / "m.csv"
    path.write_text(
        "source,model,task,gpu,gpu_count,precision,batch_size,batch_scope,seq_len,throughput,unit,metric,"
        "throughput_scope,framework,system,flag,notes,file\n"
        "s,ResNet-50 v1.5 (NVIDIA DLE),train,A10,2,amp,256,global (summed over GPUs),,800,images/s,"
        "throughput,"
        "total over all GPUs in system,PyTorch,x,,PyTorch=1.13.0,f.csv\n"
    )
    (m,) = load_measurements_file(path)
    assert m.ok and m.batch_size == 128 and m.precision == "amp-fp16"
    assert m.samples_per_second.median == pytest.approx(400.0)
    assert m.host.accelerator == "A10"
    assert m.workload_name == "resnet50"


def test_bench_json_round_trips(tmp_path: Path):
    from perdollar.measure.result import HostFingerprint, Measurement, Rate

    host = HostFingerprint("cpu", 8, 32.0, "NVIDIA A10G", "A10G", 1, None, "g5.2xlarge", "aws")
    original = Measurement(
        "ok",
        "cached-input",
        "mlp",
        "abc",
        64,
        "fp32",
        host,
        "2026-01-01T00:00:00Z",
        samples_per_second=Rate(1000.0, 990.0, 1010.0),
    )
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([measurement_to_dict(original)]))
    (loaded,) = load_measurements_file(path)
    assert loaded.samples_per_second.median == 1000.0 and loaded.host.accelerator_key == "A10G"


def test_missing_file_is_a_clear_error(tmp_path: Path):
    with pytest.raises(PerdollarError, match="no such file"):
        load_measurements_file(tmp_path / "nope.csv")
