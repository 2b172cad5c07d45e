"""Every write method of the HMS endpoint has a location rule; one catalogd cannot judge is refused."""

from __future__ import annotations

from catalogd.hms import methods, rules
from catalogd.hms.rules import WRITE_RULES, Rule

WRITES = sorted(m for m in methods.IDL_METHODS if methods.kind(m) is methods.Kind.WRITE)


def test_every_write_method_has_a_rule() -> None:
    # A write method added to methods.py without a rule here would be relayed unjudged.
    missing = [m for m in WRITES if m not in WRITE_RULES]
    assert not missing, f"write methods without a location rule in catalogd/hms/rules.py: {missing}"


def test_the_table_names_only_write_methods() -> None:
    extra = sorted(m for m in WRITE_RULES if methods.kind(m) is not methods.Kind.WRITE)
    assert not extra, f"rules for methods methods.py does not classify as writes: {extra}"


def test_methods_catalogd_cannot_judge_are_refused() -> None:
    for method in ("add_index", "alter_index", "drop_index_by_name", "exchange_partition", "exchange_partitions"):
        assert WRITE_RULES[method] is Rule.REFUSED
        message = rules.refusal(method)
        assert message is not None and "cannot judge" in message and method in message


def test_judged_writes_are_not_refused() -> None:
    for method in WRITES:
        if WRITE_RULES[method] is not Rule.REFUSED:
            assert rules.refusal(method) is None, method
    assert rules.refusal("get_table") is None  # reads have no rule
    assert rules.refusal("lock") is None  # nor global writes (no location)


def test_drops_of_partitions_are_judged_as_drops() -> None:
    for method in ("drop_partition", "drop_partition_with_environment_context", "drop_partition_by_name",
                   "drop_partition_by_name_with_environment_context", "drop_partitions_req"):
        assert WRITE_RULES[method] is Rule.DROP
