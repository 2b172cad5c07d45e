"""DuckDB's iceberg extension on a REST catalog, for the tests: DuckDB 1.5.5 from PyPI with its
extensions from the PyPI packages ``duckdb-extension-iceberg`` (and the ``avro`` and ``httpfs``
extensions it loads: Iceberg's manifests are Avro files, its REST client is httpfs's HTTP client),
installed from those packages' files by ``duckdb-extensions``. Autoinstall and autoload are off, so
DuckDB never fetches an extension from the network: a missing one fails the test.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
from duckdb_extensions import import_extension

__all__ = ["EXTENSIONS", "attach_rest", "connect"]

#: The extensions loaded, in order (iceberg loads avro when it starts, and needs httpfs for REST).
EXTENSIONS = ("avro", "httpfs", "iceberg")


def connect(extension_dir: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the iceberg extension loaded from the PyPI packages' files into
    ``extension_dir`` (not ``~/.duckdb``): nothing is downloaded."""
    con = duckdb.connect(config={
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "extension_directory": str(extension_dir),
    })
    for name in EXTENSIONS:
        import_extension(name, con=con)  # INSTALL '<the package's file>'
        con.execute(f"LOAD {name}")
    return con


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def attach_rest(con: duckdb.DuckDBPyConnection, alias: str, endpoint: str, warehouse: str,
                token: str | None = None) -> str:
    """``ATTACH`` the REST catalog at ``endpoint`` (``http://host:port/iceberg``), warehouse
    ``warehouse``, as ``alias``; with ``token``, a bearer token in a secret. Returns the statement."""
    if token is None:
        options = "AUTHORIZATION_TYPE 'none'"
    else:
        secret = f"{alias}_token"
        con.execute(f"CREATE OR REPLACE SECRET {secret} (TYPE iceberg, TOKEN {_quote(token)})")
        options = f"SECRET {secret}"
    statement = f"ATTACH {_quote(warehouse)} AS {alias} (TYPE iceberg, ENDPOINT {_quote(endpoint)}, {options})"
    con.execute(statement)
    return statement
