"""Command-line words into values: ``KEY=VALUE`` properties and ``--lease`` durations."""

from __future__ import annotations

from catalogd.errors import UsageError


def parse_properties(values: tuple[str, ...]) -> dict[str, str]:
    """``("a=1", "b = 2")`` -> ``{"a": "1", "b": " 2"}`` (keys stripped, values as given)."""
    props = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"bad property {item!r}: write it as KEY=VALUE")
        props[key.strip()] = value
    return props


def parse_lease(text: str | None) -> float | None:
    """``--lease`` as seconds (None: the daemon's default)."""
    from catalogd.config import parse_duration

    if text is None:
        return None
    try:
        seconds = parse_duration(text).total_seconds()
    except ValueError as e:
        raise UsageError(f"--lease: {e}") from None
    if seconds <= 0:
        raise UsageError(f"--lease: must be longer than zero, got {text!r}")
    return seconds
