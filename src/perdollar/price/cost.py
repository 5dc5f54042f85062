"""On-demand cost algebra: samples per dollar, time and cost to a target.

Every function works elementwise on floats or numpy arrays, so the selection stage prices
tens of thousands of candidates in one call. Prices are USD per hour for *all* nodes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def _as_float(values: ArrayLike) -> FloatArray:
    return np.asarray(values, dtype=np.float64)


def total_price_per_hour(price_per_node_hour: ArrayLike, nodes: ArrayLike) -> FloatArray:
    """The bill for a job: every node is paid for, whether or not it is the bottleneck."""
    return _as_float(price_per_node_hour) * _as_float(nodes)


def samples_per_dollar(samples_per_second: ArrayLike, price_per_hour: ArrayLike) -> FloatArray:
    """``samples/s × 3600 / ($/h)``; zero throughput gives 0, a free machine gives inf."""
    rate = _as_float(samples_per_second)
    price = _as_float(price_per_hour)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(price > 0, rate * 3600.0 / np.where(price > 0, price, 1.0), np.inf)
    return np.where(rate > 0, result, 0.0)


def hours_to_target(target_samples: float, samples_per_second: ArrayLike) -> FloatArray:
    """Hours of uninterrupted work to process ``target_samples``; inf at zero throughput."""
    rate = _as_float(samples_per_second)
    with np.errstate(divide="ignore"):
        return np.where(rate > 0, target_samples / np.where(rate > 0, rate, 1.0) / 3600.0, np.inf)


def cost_of_hours(hours: ArrayLike, price_per_hour: ArrayLike) -> FloatArray:
    """USD for ``hours`` of all nodes (per-second billing: no rounding up to the hour)."""
    return _as_float(hours) * _as_float(price_per_hour)


def target_from_epochs(epochs: float, dataset_size: float) -> float:
    """Samples to process for ``epochs`` passes over ``dataset_size`` samples."""
    return float(epochs) * float(dataset_size)
