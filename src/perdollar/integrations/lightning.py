"""The Lightning callback, beside the Hugging Face one (it lives in :mod:`perdollar.measure.lightning`)."""

from perdollar.measure.lightning import MeterCallback

__all__ = ["MeterCallback"]
