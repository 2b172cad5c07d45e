"""The failed-authentication back-off: free attempts, a doubling lockout with a bound, per address and claim."""

from __future__ import annotations

from catalogd.auth.throttle import Throttle, address_of, claim_of_name, claim_of_token


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_free_attempts_then_a_doubling_lockout_up_to_the_bound() -> None:
    clock = Clock()
    throttle = Throttle(free=3, base=1.0, max_delay=4.0, forget=600, clock=clock)
    for _ in range(3):
        assert throttle.wait("10.0.0.7:4000") == 0
        assert throttle.failed("10.0.0.7:4000") == 0
    delays = []
    for _ in range(5):
        delays.append(throttle.failed("10.0.0.7:4001"))
        clock.now += delays[-1]
    assert delays == [1.0, 2.0, 4.0, 4.0, 4.0]
    throttle.failed("10.0.0.7:4002")
    # Locked: another port of the same address waits too; another address does not.
    assert throttle.wait("10.0.0.7:5000") == 4.0
    assert throttle.wait("10.0.0.8:5000") == 0
    clock.now += 4.0
    assert throttle.wait("10.0.0.7:5000") == 0
    assert throttle.stats() == {"failures": 9, "refused": 1, "lockouts": 1, "locked": 0}


def test_a_success_clears_the_address_and_quiet_time_forgets_it() -> None:
    clock = Clock()
    throttle = Throttle(free=1, base=2.0, max_delay=60, forget=100, clock=clock)
    throttle.failed("a:1")
    assert throttle.failed("a:1") == 2.0
    throttle.succeeded("a:2")
    assert throttle.wait("a:3") == 0
    assert throttle.failed("a:1") == 0  # counted from scratch
    clock.now += 100
    assert throttle.failed("a:1") == 0  # forgotten after 100 s without a failure


def test_a_claim_is_locked_per_address_and_other_claims_are_not() -> None:
    clock = Clock()
    throttle = Throttle(free=1, base=5.0, clock=clock)
    wrong, right = claim_of_token("wrong-token-0123456789"), claim_of_token("right-token-0123456789")
    throttle.failed("a:1", wrong)
    assert throttle.failed("a:2", wrong) == 5.0
    assert throttle.wait("a:3", wrong) == 5.0  # the same token from the same address: held back
    assert throttle.wait("a:3", right) == 0  # another token from that address: checked
    assert throttle.wait("b:1", wrong) == 0  # the same token from another address: checked
    assert throttle.wait("a:3") == 0  # nothing claimed: its own key
    alice = claim_of_name("certificate", "CN=alice")
    throttle.failed("a:1", alice)
    throttle.failed("a:1", alice)
    assert throttle.wait("a:1", alice) > 0 and throttle.wait("a:1", claim_of_name("certificate", "CN=bob")) == 0


def test_a_claim_is_a_keyed_hash_not_the_token() -> None:
    claim = claim_of_token("secret-token-0123456789")
    assert "secret-token" not in claim and claim == claim_of_token("secret-token-0123456789")
    assert claim != claim_of_token("secret-token-0123456780")


def test_a_flood_of_distinct_wrong_tokens_never_holds_back_a_correct_one_and_stays_bounded() -> None:
    clock = Clock()
    throttle = Throttle(free=0, base=30.0, max_keys=1000, clock=clock)
    for n in range(5000):
        throttle.failed("127.0.0.1:4000", claim_of_token(f"wrong-{n:020d}"))
    assert len(throttle._entries) == 1000
    assert throttle.wait("127.0.0.1:4001", claim_of_token("the-job-s-own-token-0123")) == 0
    # Repeating one wrong token still backs off.
    repeated = claim_of_token("wrong-00000000000000004999")
    assert throttle.wait("127.0.0.1:4002", repeated) > 0


def test_off_and_bounded() -> None:
    off = Throttle(base=0)
    for _ in range(100):
        assert off.failed("a:1") == 0
    assert off.wait("a:1") == 0
    small = Throttle(free=0, base=1, max_keys=3)
    for n in range(10):
        small.failed(f"10.0.0.{n}:1")
    assert len(small._entries) == 3
    assert small.wait("10.0.0.0:1") == 0  # the oldest were forgotten
    assert small.wait("10.0.0.9:1") > 0


def test_address_of() -> None:
    assert address_of("10.0.0.7:39000") == "10.0.0.7"
    assert address_of("[::1]:5") == "[::1]"
    assert address_of("local") == "local"
