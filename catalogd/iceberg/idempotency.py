"""The ``Idempotency-Key`` header on the REST door's mutations.

A client that retries a mutation after a lost answer (a timeout, a dropped connection) sends
the same key; the first request's final answer is replayed instead of the mutation running a
second time (a commit applied twice, a create answered "already exists"). A retry that arrives
while the first is still running waits for its answer. Answers of 5xx are not kept (the
mutation may not have happened: the retry runs). The same key with another body is refused.

Keys are kept in the member's memory for the advertised lifetime (``idempotency-key-lifetime``
in ``/v1/config``), scoped to the caller, method and path, at most ``max_keys`` of them; a key
sent to another member, or after a restart, runs again (the spec allows a server to forget).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from catalogd.iceberg.errors import error_body

__all__ = ["Answer", "IdempotencyKeys"]

Answer = tuple[int, "bytes | None", "dict[str, str] | None"]


@dataclass
class _Entry:
    digest: str
    done: threading.Event = field(default_factory=threading.Event)
    answer: Answer | None = None
    expires: float = 0.0


class IdempotencyKeys:
    """Answers of mutations by idempotency key."""

    def __init__(self, lifetime: float, max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.lifetime = lifetime
        self.max_keys = max_keys
        self._clock = clock
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def run(self, scope: Hashable, body: bytes, mutate: Callable[[], Answer]) -> Answer:
        """``mutate()``'s answer, or the answer an earlier request with this scope got."""
        digest = hashlib.sha256(body).hexdigest()
        now = self._clock()
        with self._lock:
            self._expire(now)
            entry = self._entries.get(scope)
            mine = entry is None
            if entry is None:
                entry = _Entry(digest, expires=now + self.lifetime)
                self._entries[scope] = entry
                while len(self._entries) > self.max_keys:
                    self._entries.popitem(last=False)
        if not mine:
            if entry.digest != digest:
                return 422, error_body(422, "UnprocessableEntityException",
                                       "this Idempotency-Key was used with another request body"), None
            entry.done.wait()
            if entry.answer is not None:
                return entry.answer
            return self.run(scope, body, mutate)  # the first one failed with a 5xx: run it
        answer: Answer | None = None
        try:
            answer = mutate()
            return answer
        finally:
            with self._lock:
                if answer is not None and answer[0] < 500:
                    entry.answer = answer
                elif self._entries.get(scope) is entry:
                    del self._entries[scope]
            entry.done.set()

    def _expire(self, now: float) -> None:
        while self._entries:
            scope, entry = next(iter(self._entries.items()))
            if entry.expires > now or not entry.done.is_set():
                break
            del self._entries[scope]
