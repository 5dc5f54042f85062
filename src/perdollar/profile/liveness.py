"""Which tensor storages are alive as a traced step runs: the peak memory and what fills it.

Every tensor an operator produces is registered against its storage; a weak-reference
finaliser releases it when the last tensor on that storage dies (fake tensors keep their
Python object for as long as autograd holds them, so the finaliser fires when the memory
would really be freed). The peak is what one step needs, and the storages live at the peak
say which parts (weights, gradients, saved activations, temporaries) it was made of.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch


@dataclass
class _Storage:
    serial: int
    nbytes: int
    allocated_at: int  # event tick
    freed_at: int | None = None
    tensors: int = 0


class LiveMemory:
    """Live bytes over a traced step, and the moment they were highest."""

    def __init__(self) -> None:
        self._live: dict[int, _Storage] = {}
        self._history: list[_Storage] = []
        self._tick = 0
        self.total = 0
        self.peak = 0
        self._peak_tick = 0

    def track(self, tensor: torch.Tensor) -> int:
        """Register ``tensor`` (its storage counts once however many views share it); its serial."""
        storage = tensor.untyped_storage()
        key = int(storage._cdata)
        entry = self._live.get(key)
        if entry is None:
            self._tick += 1
            entry = _Storage(len(self._history), int(storage.nbytes()), self._tick)
            self._live[key] = entry
            self._history.append(entry)
            self.total += entry.nbytes
            if self.total > self.peak:
                self.peak, self._peak_tick = self.total, self._tick
        entry.tensors += 1
        weakref.finalize(tensor, self._release, key, entry.serial)
        return entry.serial

    def _release(self, key: int, serial: int) -> None:
        entry = self._live.get(key)
        if entry is None or entry.serial != serial:
            return
        entry.tensors -= 1
        if entry.tensors == 0:
            self._tick += 1
            entry.freed_at = self._tick
            del self._live[key]
            self.total -= entry.nbytes

    def serial_of(self, tensor: torch.Tensor) -> int:
        entry = self._live.get(int(tensor.untyped_storage()._cdata))
        return entry.serial if entry is not None else self.track(tensor)

    def restart_peak(self) -> None:
        """Look for a new peak from the current live set on."""
        self.peak, self._peak_tick = self.total, self._tick

    def snapshot(self) -> PeakSnapshot:
        """The peak since the last restart and the size of every storage live at that moment."""
        tick = self._peak_tick
        sizes = {
            s.serial: s.nbytes
            for s in self._history
            if s.allocated_at <= tick and (s.freed_at is None or s.freed_at > tick)
        }
        return PeakSnapshot(self.peak, sizes)


@dataclass(frozen=True)
class PeakSnapshot:
    """The highest live total of a stretch of the step, and the storages that made it up."""

    peak: int
    sizes: dict[int, int]

    def bytes_of(self, serials: set[int]) -> int:
        return sum(size for serial, size in self.sizes.items() if serial in serials)
