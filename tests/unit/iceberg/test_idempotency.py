"""Idempotency-Key: one run per key, its answer replayed, 5xx forgotten, another body refused."""

from __future__ import annotations

import threading

from catalogd.iceberg.idempotency import IdempotencyKeys


def test_a_retry_gets_the_first_answer_without_running_again() -> None:
    keys = IdempotencyKeys(lifetime=60)
    runs: list[int] = []

    def mutate() -> tuple[int, bytes | None, dict[str, str] | None]:
        runs.append(1)
        return 200, b'{"n": %d}' % len(runs), None

    first = keys.run(("p", "POST", "/x", "k"), b"{}", mutate)
    second = keys.run(("p", "POST", "/x", "k"), b"{}", mutate)
    assert first == second == (200, b'{"n": 1}', None)
    assert len(runs) == 1
    other = keys.run(("p", "POST", "/x", "k2"), b"{}", mutate)
    assert other[1] == b'{"n": 2}'


def test_another_body_with_the_same_key_is_refused() -> None:
    keys = IdempotencyKeys(lifetime=60)
    keys.run(("p", "POST", "/x", "k"), b"{}", lambda: (204, None, None))
    status, body, _ = keys.run(("p", "POST", "/x", "k"), b'{"a": 1}', lambda: (204, None, None))
    assert status == 422 and body is not None and b"another request body" in body


def test_a_server_error_is_not_kept() -> None:
    keys = IdempotencyKeys(lifetime=60)
    answers = iter([(503, b"{}", None), (200, b"ok", None)])
    assert keys.run("s", b"", lambda: next(answers))[0] == 503
    assert keys.run("s", b"", lambda: next(answers))[0] == 200


def test_keys_expire_after_their_lifetime() -> None:
    now = [0.0]
    keys = IdempotencyKeys(lifetime=10, clock=lambda: now[0])
    count = [0]

    def mutate() -> tuple[int, bytes | None, dict[str, str] | None]:
        count[0] += 1
        return 200, None, None

    keys.run("s", b"", mutate)
    now[0] = 11
    keys.run("s", b"", mutate)
    assert count[0] == 2


def test_a_retry_while_the_first_runs_waits_for_its_answer() -> None:
    keys = IdempotencyKeys(lifetime=60)
    started, release = threading.Event(), threading.Event()
    runs: list[int] = []

    def slow() -> tuple[int, bytes | None, dict[str, str] | None]:
        runs.append(1)
        started.set()
        release.wait(10)
        return 200, b"first", None

    results: list[object] = []
    first = threading.Thread(target=lambda: results.append(keys.run("s", b"", slow)))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: results.append(keys.run("s", b"", slow)))
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert results == [(200, b"first", None)] * 2
    assert len(runs) == 1
