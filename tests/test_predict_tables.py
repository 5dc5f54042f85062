"""The fit and the product must see every accelerator alike, or fitted efficiencies do not transfer."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perdollar import catalog
from perdollar.predict.lab.spec_table import read_accelerator_specs
from perdollar.predict.tables import DeviceTable


def test_fit_and_catalog_give_the_roofline_the_same_accelerators(shared_data: Path):
    """The fit reads the shared accelerator table, predictions read the bundled catalog built from
    it: every rate, bandwidth, SM count, power density, matrix-unit flag and software stack must
    agree (a field one reader drops, such as the compute capability or the stack, silently changes
    what the fit learns)."""
    specs = read_accelerator_specs(shared_data)
    bundled = catalog.load().accelerators
    keys = sorted(set(specs) & set(bundled))
    assert len(keys) > 50
    fitted = DeviceTable.from_accelerators([specs[k] for k in keys])
    shipped = DeviceTable.from_accelerators([bundled[k] for k in keys])
    np.testing.assert_allclose(fitted.peak, shipped.peak, rtol=1e-9)
    np.testing.assert_allclose(fitted.bandwidth, shipped.bandwidth, rtol=1e-9)
    np.testing.assert_array_equal(fitted.sm_count, shipped.sm_count)
    np.testing.assert_allclose(fitted.watts_per_sm_ghz, shipped.watts_per_sm_ghz, rtol=1e-9)
    np.testing.assert_array_equal(fitted.has_tensor_cores, shipped.has_tensor_cores)
    np.testing.assert_array_equal(fitted.exact_fp32_on_matrix, shipped.exact_fp32_on_matrix)
    np.testing.assert_array_equal(fitted.simt_gemm_share, shipped.simt_gemm_share)
    np.testing.assert_array_equal(fitted.runs_rocm, shipped.runs_rocm)
    assert fitted.runs_rocm.any()
