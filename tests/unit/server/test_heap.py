"""The start-up heap is frozen: later full collections skip it; what is made later is still collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from catalogd.server.heap import freeze_startup_heap


@pytest.fixture
def frozen() -> Iterator[int]:
    count = freeze_startup_heap()
    try:
        yield count
    finally:
        gc.unfreeze()  # the test process goes on with its heap as it was


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_the_heap_is_frozen_and_later_garbage_is_still_collected(frozen: int) -> None:
    assert frozen > 0 and gc.get_freeze_count() > 0
    later = Node()
    gone = weakref.ref(later)
    del later
    gc.collect()
    assert gone() is None
