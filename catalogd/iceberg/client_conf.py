"""Each client's settings to reach one catalogd catalog through the Iceberg REST door.

``catalogd iceberg-conf <catalog>`` prints them (docs/iceberg-rest.md): the catalog URI
(``http(s)://host:http-port/iceberg``), the warehouse (the catalog's name), and blocks for
pyiceberg, Spark, Trino, DuckDB and Flink. A token is never among them: where a client needs
one, a placeholder stands for it, or the name of the environment variable the client reads
it from (the CLI's own token stays in the CLI).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from catalogd.errors import InvalidArgumentError, UnsupportedError
from catalogd.model import CatalogInfo

__all__ = ["TOKEN_PLACEHOLDER", "IcebergClientSettings", "check_client_name", "client_settings"]

#: What stands where a client's configuration needs the token's value.
TOKEN_PLACEHOLDER = "<your token>"

#: A client-side catalog name every client takes unquoted (Spark's and Trino's identifiers,
#: Flink's catalog names, DuckDB's attach alias, a YAML key).
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class IcebergClientSettings:
    """Every client's settings for one catalog; ``catalogd.cli`` prints them as text or JSON."""

    #: The catalogd catalog (the REST warehouse).
    catalog: str
    #: The name the clients give it (Spark's ``spark.sql.catalog.<name>``, Trino's catalog file...).
    name: str
    uri: str
    warehouse: str
    #: Whether the settings carry a bearer token (catalogd's auth is on).
    auth: bool
    #: The environment variable that holds the token where a client can read one.
    token_env: str
    #: The PEM file of the authorities that sign catalogd's HTTPS certificate (None: plain or system CAs).
    ca: str | None
    #: ``load_catalog(name, **properties)``, also the ``.pyiceberg.yaml`` entry (``ssl`` is a mapping).
    pyiceberg: dict[str, str | dict[str, str]] = field(default_factory=dict)
    #: ``spark.*`` settings (with ``iceberg-spark-runtime`` on the classpath).
    spark: dict[str, str] = field(default_factory=dict)
    #: ``etc/catalog/<name>.properties``.
    trino: dict[str, str] = field(default_factory=dict)
    #: SQL statements, in order.
    duckdb: list[str] = field(default_factory=list)
    #: One ``CREATE CATALOG`` statement.
    flink: str = ""
    #: What the settings leave to the user (the runtime jar, the storage's credentials...).
    notes: list[str] = field(default_factory=list)

    @property
    def pyiceberg_yaml(self) -> str:
        """The ``~/.pyiceberg.yaml`` form of ``pyiceberg``."""
        lines = ["catalog:", f"  {self.name}:"]
        for key, value in self.pyiceberg.items():
            if isinstance(value, dict):  # ssl: {cabundle: ...}
                lines.append(f"    {key}:")
                lines += [f"      {inner}: {_yaml(v)}" for inner, v in value.items()]
            else:
                lines.append(f"    {key}: {_yaml(value)}")
        return "\n".join(lines)


def _yaml(value: str) -> str:
    """A YAML scalar: quoted when it has characters YAML reads otherwise (``<``, ``:`` ...)."""
    return value if re.fullmatch(r"[A-Za-z0-9_./-]+", value) else '"' + value.replace('"', '\\"') + '"'


def _sql(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def check_client_name(name: str) -> str:
    """``name`` if every client takes it as a catalog name unquoted.

    Raises:
        InvalidArgumentError: it is not a plain identifier.
    """
    if not _PLAIN_NAME.fullmatch(name):
        raise InvalidArgumentError(f"client catalog name {name!r}: letters, digits and _ only, not first a digit "
                                   "(--name gives another)")
    return name


def client_settings(info: CatalogInfo, *, auth: bool, name: str | None = None, token_env: str = "CATALOGD_TOKEN",
                    ca: str | None = None) -> IcebergClientSettings:
    """The settings for ``info``'s catalog through the REST door of the daemon that described it.

    Args:
        auth: the daemon has auth on: every client sends ``Authorization: Bearer <token>``.
        name: the clients' name for the catalog (default: the catalog's own name).
        token_env: the environment variable the token is in, for the clients that read one.
        ca: the CA bundle of catalogd's HTTPS certificate.

    Raises:
        UnsupportedError: the daemon does not say where it serves the REST catalog (older than issue 34).
        InvalidArgumentError: ``name`` is not a plain identifier.
    """
    if not info.iceberg_uri:
        raise UnsupportedError(f"the daemon does not serve the Iceberg REST catalog for {info.name!r} "
                               "(a catalogd without it: upgrade the daemon)")
    name = check_client_name(name or info.name)
    uri, warehouse = info.iceberg_uri, info.name
    https = uri.startswith("https:")
    s = IcebergClientSettings(catalog=info.name, name=name, uri=uri, warehouse=warehouse, auth=auth,
                              token_env=token_env, ca=ca if https else None)

    s.pyiceberg = {"type": "rest", "uri": uri, "warehouse": warehouse}
    if auth:
        s.pyiceberg["token"] = TOKEN_PLACEHOLDER
    if s.ca:
        s.pyiceberg["ssl"] = {"cabundle": s.ca}

    prefix = f"spark.sql.catalog.{name}"
    s.spark = {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": uri,
        f"{prefix}.warehouse": warehouse,
        # Spark's own table cache would hide other engines' commits between two statements.
        f"{prefix}.cache-enabled": "false",
    }
    if auth:
        s.spark[f"{prefix}.token"] = TOKEN_PLACEHOLDER

    s.trino = {
        "connector.name": "iceberg",
        "iceberg.catalog.type": "rest",
        "iceberg.rest-catalog.uri": uri,
        "iceberg.rest-catalog.warehouse": warehouse,
    }
    if auth:
        # Trino sends a static token as a bearer token with security OAUTH2; ${ENV:...} is
        # expanded by Trino from its own environment when it reads the catalog file.
        s.trino["iceberg.rest-catalog.security"] = "OAUTH2"
        s.trino["iceberg.rest-catalog.oauth2.token"] = "${ENV:" + token_env + "}"

    s.duckdb = ["INSTALL iceberg;", "LOAD iceberg;"]
    if auth:
        s.duckdb.append(f"CREATE SECRET {name}_token (TYPE iceberg, TOKEN {_sql(TOKEN_PLACEHOLDER)});")
        s.duckdb.append(f"ATTACH {_sql(warehouse)} AS {name} (TYPE iceberg, ENDPOINT {_sql(uri)}, "
                        f"SECRET {name}_token);")
    else:
        s.duckdb.append(f"ATTACH {_sql(warehouse)} AS {name} (TYPE iceberg, ENDPOINT {_sql(uri)}, "
                        "AUTHORIZATION_TYPE 'none');")

    options = [("type", "iceberg"), ("catalog-type", "rest"), ("uri", uri), ("warehouse", warehouse)]
    if auth:
        options.append(("token", TOKEN_PLACEHOLDER))
    s.flink = f"CREATE CATALOG {name} WITH (" + ", ".join(f"{_sql(k)}={_sql(v)}" for k, v in options) + ");"

    s.notes.append("Spark needs org.apache.iceberg:iceberg-spark-runtime-<spark>_<scala> on its classpath, "
                   "Flink iceberg-flink-runtime. Data files are read and written by the clients themselves, with "
                   "their own settings for the warehouse's storage (Trino: fs.hadoop.enabled=true for file: and "
                   "hdfs: locations, fs.native-s3.enabled=true and s3.* for S3).")
    if auth:
        s.notes.append(f"Put the token where {TOKEN_PLACEHOLDER} stands (pyiceberg also reads "
                       f"$PYICEBERG_CATALOG__{name.upper()}__TOKEN; Trino's file reads ${token_env}); "
                       "a reader's token loads tables, a writer's commits.")
    if https:
        s.notes.append("HTTPS: the JVM clients (Spark, Trino, Flink) verify catalogd's certificate with their "
                       "truststore (javax.net.ssl.trustStore)" + (f"; pyiceberg with {s.ca}" if s.ca else "") + ".")
    return s
