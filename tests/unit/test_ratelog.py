"""Lines a client can cause are logged at a bounded rate: the first at once, then one per interval with a count."""

from __future__ import annotations

import logging

import pytest

from catalogd.ratelog import BoundedLog, counts


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_first_line_at_once_then_one_per_interval_telling_how_many_were_left_out(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    log = BoundedLog(logging.getLogger("catalogd.test.ratelog"), "test-kind-a", interval=60.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="catalogd.test.ratelog"):
        assert log.log("refused %s", "a")
        for n in range(1000):
            clock.now += 0.01
            assert not log.log("refused %s", n)
        clock.now += 60.0
        assert log.log("refused %s", "b")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "refused a"
    assert len(lines) == 2
    assert lines[1].startswith("refused b (and 1000 more like it in the ")
    assert (log.events, log.suppressed) == (1002, 1000)


def test_counts_sum_each_kind_and_a_level_can_be_chosen(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    logger = logging.getLogger("catalogd.test.ratelog2")
    first = BoundedLog(logger, "test-kind-b", level=logging.INFO, interval=10.0, clock=clock)
    second = BoundedLog(logger, "test-kind-b", level=logging.INFO, interval=10.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="catalogd.test.ratelog2"):
        for _ in range(3):
            first.log("x")
            second.log("y")
    assert [r.levelno for r in caplog.records] == [logging.INFO, logging.INFO]
    assert counts()["test-kind-b"] == (6, 4)
