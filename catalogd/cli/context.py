"""What every command is handed: the daemon's address, the token, and, made on first use, a client of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from catalogd.client import CatalogClient


class Context:
    """The root group's options that commands need (``--json`` is for the output layer, not for them)."""

    def __init__(self, server: str | None, token: str | None = None,
                 tls: tuple[str | None, str | None, str | None] = (None, None, None)) -> None:
        self.server = server
        #: ``--token``; None: the client reads ``$CATALOGD_TOKEN``.
        self._token = token
        #: ``--tls-ca``, ``--tls-cert``, ``--tls-key`` (each None: its environment variable).
        self.tls = tls
        self._client: CatalogClient | None = None

    @property
    def client(self) -> CatalogClient:
        if self._client is None:
            # Imported here: `serve` and `config check` never talk to a daemon.
            from catalogd.client import CatalogClient

            ca, cert, key = self.tls
            self._client = CatalogClient(self.server, token=self._token, tls_ca=ca, tls_cert=cert, tls_key=key)
        return self._client


pass_ctx = click.make_pass_decorator(Context)
