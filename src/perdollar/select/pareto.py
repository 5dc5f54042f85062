"""Pareto front of two costs to minimise (expected time and expected cost)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def pareto_mask(time: ArrayLike, cost: ArrayLike) -> NDArray[np.bool_]:
    """True where no other point is at least as good on both axes and better on one.

    Sort by time (then cost), sweep keeping the running minimum cost: a point is on the front
    exactly when its cost is below every cost seen at a strictly smaller time, and it is the
    cheapest among the points that share its time. O(n log n); NaN/inf points are never on it.
    """
    t = np.asarray(time, dtype=np.float64)
    c = np.asarray(cost, dtype=np.float64)
    mask = np.zeros(t.shape, dtype=bool)
    valid = np.isfinite(t) & np.isfinite(c)
    if not valid.any():
        return mask
    index = np.flatnonzero(valid)
    order = index[np.lexsort((c[index], t[index]))]
    ts, cs = t[order], c[order]
    # Cheapest cost among all points strictly faster than each point (inf for the first group).
    running = np.minimum.accumulate(cs)
    group_start = np.searchsorted(ts, ts, side="left")
    before = np.where(group_start > 0, running[np.maximum(group_start - 1, 0)], np.inf)
    # Within a time group the first (cheapest) point can be on the front; an equal-cost twin too.
    group_min = cs[group_start]
    on_front = (cs < before) & (cs == group_min)
    mask[order] = on_front
    return mask


def pareto_indices(time: ArrayLike, cost: ArrayLike) -> tuple[int, ...]:
    """Indices of the Pareto points, fastest first."""
    mask = pareto_mask(time, cost)
    t = np.asarray(time, dtype=np.float64)
    chosen = np.flatnonzero(mask)
    return tuple(int(i) for i in chosen[np.argsort(t[chosen], kind="stable")])
