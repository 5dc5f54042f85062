"""A spot job's checkpoints: the interval its interruption rate asks for, capped by the job's length,
and the work one interruption is expected to lose, stated in the answer."""

from __future__ import annotations

import re

import pytest

from perdollar.ask import recommend
from perdollar.question import SpotSettings

# A slow checkpoint on a quiet market: Young/Daly asks for √(2 · 1 h · 36,000 h) ≈ 11 days.
QUIET = SpotSettings(checkpoint_seconds=3600.0, interruption_rate=0.02)
DAY = 24.0


def _spot_answer(days: float):
    """The fastest one-node spot answer for a job of about ``days`` days of work."""
    probe = recommend("mlp", samples=1e9, objective="time", market="spot", clouds=["aws"], spot=QUIET)
    top = probe.estimates[0]
    samples = top.samples_per_second * days * DAY * 3600
    return recommend("mlp", samples=samples, objective="time", market="spot", clouds=["aws"], spot=QUIET)


def _spot_sentence(explanation: str) -> str:
    return next(line for line in explanation.splitlines() if line.startswith("Spot risk priced in"))


def test_a_job_shorter_than_one_interval_is_told_one_final_checkpoint() -> None:
    answer = _spot_answer(3.7)
    top = answer.estimates[0]
    assert 3.0 * DAY < (top.expected_time_hours or 0) < 4.5 * DAY
    sentence = _spot_sentence(answer.explanation)
    assert "checkpoint every" not in sentence  # not "every 3.7 d" for a 3.7-day job
    assert "one final checkpoint" in sentence
    young_daly = re.search(r"Young/Daly interval \(([\d.]+) d at this interruption rate\)", sentence)
    assert young_daly and float(young_daly.group(1)) > 3.7
    losing = r"an interruption losing ([\d.]+) (h|d) of work on average \((\d+)% of the job\)"
    lost = re.search(losing, sentence)
    assert lost, sentence
    assert 0 < int(lost.group(3)) <= 60  # about half the job: it restarts from the beginning


def test_a_job_longer_than_the_interval_checkpoints_at_it_and_states_the_lost_work() -> None:
    answer = _spot_answer(60.0)
    top = answer.estimates[0]
    sentence = _spot_sentence(answer.explanation)
    every = re.search(r"checkpoint every ([\d.]+) d \(Young/Daly at this interruption rate\)", sentence)
    assert every, sentence
    assert float(every.group(1)) * DAY == pytest.approx(top.checkpoint_interval_hours, rel=0.05)
    assert (top.checkpoint_interval_hours or 0) < (top.expected_time_hours or 0) / 3
    losing = r"an interruption losing [\d.]+ (h|d) of work on average \(\d+% of an interval\)"
    assert re.search(losing, sentence)
