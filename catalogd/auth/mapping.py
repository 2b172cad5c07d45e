"""Names proven by a Kerberos ticket or a client certificate, mapped to catalogd principals by rules.

A rule is ``PATTERN -> REPLACEMENT``: the first rule whose regular expression matches the whole
name gives the principal (``\\1`` in the replacement is the pattern's first group). No rule
matching: the name maps to nothing and the connection is refused, so a ticket of a realm or a
certificate of a kind nobody configured proves no one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["NameMapper", "default_kerberos_rules"]


class NameMapper:
    """Applies ``PATTERN -> REPLACEMENT`` rules in order (the config checked their syntax)."""

    def __init__(self, rules: Sequence[str]) -> None:
        self.rules: list[tuple[re.Pattern[str], str]] = []
        for rule in rules:
            pattern, _, replacement = rule.partition(" -> ")
            self.rules.append((re.compile(pattern.strip()), replacement.strip()))

    def map(self, name: str) -> str | None:
        """The principal ``name`` maps to, or None (no rule matches, or a rule maps it to nothing)."""
        for pattern, replacement in self.rules:
            match = pattern.fullmatch(name)
            if match is not None:
                mapped = match.expand(replacement).strip()
                return mapped or None
        return None


def default_kerberos_rules(service_principal: str) -> list[str]:
    """``user@REALM -> user`` for the service principal's own realm (users only, no ``service/host``)."""
    realm = service_principal.rpartition("@")[2]
    return [rf"([^/@]+)@{re.escape(realm)} -> \1"]
