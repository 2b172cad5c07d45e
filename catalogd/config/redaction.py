"""Secret settings (passwords, tokens, ...) hidden from anything printed or logged."""

from __future__ import annotations

__all__ = ["redact"]

_SECRET_WORDS = ("password", "secret", "token", "credential")
_REDACTED = "***"


def _is_secret_key(key: object) -> bool:
    lowered = str(key).lower()
    return any(word in lowered for word in _SECRET_WORDS)


def redact(mapping: dict[str, str]) -> dict[str, str]:
    """A copy of ``mapping`` in which secret values (passwords, tokens, ...) are replaced by ``***``.

    A value is secret when its key contains ``password``, ``secret``, ``token`` or
    ``credential`` (in any case).
    """
    return {key: (_REDACTED if _is_secret_key(key) else value) for key, value in mapping.items()}
