"""Callbacks for the training loops people already use: Hugging Face ``Trainer`` and Lightning.

from perdollar.integrations.hf import PerdollarCallback
from perdollar.integrations.lightning import MeterCallback
"""
