"""catalogd's signature over a dynamic table's stored definition: only a definition catalogd
wrote (and validated) is ever run.

A dynamic table's definition lives in its table's parameters (a jdbc catalog: in the table's
PostgreSQL comment), where whoever reaches the metastore or the database behind catalogd could
write one. The signature is an HMAC-SHA256, with a key derived from the stage key
(``staging.secret``, else ``<data-dir>/secrets/stage.key``: daemons sharing a metastore share
it), over the table's full name and every field that decides what a run does: the query and
its expansion, the sources, the source catalog, the freshness, the declared mode, the options
and the creation time. The handler (mode, state) and the history are catalogd's bookkeeping:
they are not signed (a forged state can at most suspend or resume a signed definition).
"""

from __future__ import annotations

import hashlib
import hmac
import json

from catalogd.dynamic import store

__all__ = ["SIGNED_FIELDS", "DefinitionSigner"]

#: The single-valued parameters signed (the chunked query and expansion are signed whole).
SIGNED_FIELDS = (store.FRESHNESS, store.DECLARED_MODE, store.OPTIONS, store.SOURCES, store.SOURCE_CATALOG,
                 store.CREATED)
#: Domain separation: the stage key also signs stages; this key signs definitions only.
_PURPOSE = b"catalogd dynamic-table definition v1"
_VERSION = "v1"


class DefinitionSigner:
    """Signs and checks dynamic-table definitions with a key derived from ``stage_key``."""

    def __init__(self, stage_key: bytes) -> None:
        self._key = hmac.new(stage_key, _PURPOSE, hashlib.sha256).digest()

    @staticmethod
    def _text(full_name: str, params: dict[str, str]) -> bytes:
        fields = {key: params.get(key) for key in SIGNED_FIELDS}
        fields[store.QUERY] = store.unchunk(params, store.QUERY)
        fields[store.EXPANDED] = store.unchunk(params, store.EXPANDED)
        return json.dumps({"table": full_name.lower(), **fields}, sort_keys=True, separators=(",", ":")).encode()

    def sign(self, full_name: str, params: dict[str, str]) -> str:
        """The signature of ``full_name``'s definition as ``params`` hold it (store it as ``store.SIGNATURE``)."""
        return f"{_VERSION}:{hmac.new(self._key, self._text(full_name, params), hashlib.sha256).hexdigest()}"

    def signed(self, full_name: str, params: dict[str, str]) -> dict[str, str]:
        """``{store.SIGNATURE: ...}`` for these parameters."""
        return {store.SIGNATURE: self.sign(full_name, params)}

    def verify(self, full_name: str, params: dict[str, str]) -> bool:
        """Whether ``params`` hold a definition of ``full_name`` that catalogd signed, unchanged since."""
        given = params.get(store.SIGNATURE) or ""
        return hmac.compare_digest(given.encode(), self.sign(full_name, params).encode())
