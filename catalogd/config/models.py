"""The configuration file as pydantic models: one class per section, each with the rules for its keys.

Keys are spelled with dashes as in YAML, while the Python attributes use underscores
(both spellings are accepted on input). A rule that finds several things wrong raises
them together (:func:`~catalogd.config.problems.problems_error`), each at its own key.
"""

from __future__ import annotations

import datetime
import difflib
import logging
import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    StringConstraints,
    field_validator,
    model_validator,
)

from catalogd.config.durations import (
    AtMost,
    Duration,
    NonNegativeDuration,
    format_duration,
    parse_duration,
    positive_duration,
)
from catalogd.config.fields import NonNegativeInt, Port, PositiveInt, identifier, lower, none_as_empty, string_map
from catalogd.config.metastore_db import METASTORE_DB_FORM, PostgresDatabase, parse_metastore_db, read_password_file
from catalogd.config.problems import Loc, problems_error, suggest
from catalogd.config.redaction import redact

__all__ = [
    "AuditConfig",
    "AuthConfig",
    "CacheConfig",
    "CatalogConfig",
    "Config",
    "DynamicTablesConfig",
    "GrantConfig",
    "PrincipalConfig",
    "ServerConfig",
    "SparkConfig",
    "StagingConfig",
    "TlsConfig",
    "hms_prefix_of",
    "raw_catalog_problems",
]

logger = logging.getLogger(__name__)

_HOUR = datetime.timedelta(hours=1)
_DAY = datetime.timedelta(days=1)
_WEEK = datetime.timedelta(days=7)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, hide_input_in_errors=True)


def _readable_file(value: Path, what: str) -> Path:
    path = value.expanduser()
    path = path if path.is_absolute() else Path.cwd() / path
    if not path.is_file():
        raise ValueError(f"{what} {str(path)!r} does not exist (or is not a file)")
    try:
        with path.open("rb"):
            pass
    except OSError as e:
        raise ValueError(f"{what} {str(path)!r} cannot be read: {e.strerror}") from None
    return path


def _file_kind(mode: int) -> str:
    """What a non-directory is called in a problem."""
    if stat.S_ISREG(mode):
        return "regular file"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


class TlsConfig(_Model):
    """TLS on every port of the daemon (Thrift API, HTTP, HMS endpoint)."""

    #: The server certificate (PEM; the chain after it), for every port.
    cert: Path
    #: Its private key (PEM); the file must not be readable by group or others.
    key: Path
    #: CA certificates (PEM) that sign client certificates: mutual TLS on the Thrift API and HTTP.
    client_ca: Path | None = Field(default=None, alias="client-ca")
    #: A JKS truststore holding the CA of ``cert`` (made with keytool), for Hive clients of the
    #: HMS endpoint: ``catalogd spark-conf`` prints it as ``hive.metastore.truststore.path``.
    truststore: Path | None = None
    #: The environment variable Hive clients find the truststore's password in, where they run:
    #: ``catalogd spark-conf`` prints ``hive.metastore.truststore.password=${env.NAME}``, which
    #: Hadoop's Configuration expands in the client. The daemon never holds the password.
    truststore_password_env: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] = Field(
        default="CATALOGD_TRUSTSTORE_PASSWORD", alias="truststore-password-env")

    @model_validator(mode="before")
    @classmethod
    def _no_password(cls, data: Any) -> Any:
        # The key of the first TLS release: the daemon handed the password to every caller of
        # get_catalog and spark-conf printed it. Refused with the way out, not ignored.
        if isinstance(data, dict) and ("truststore-password" in data or "truststore_password" in data):
            raise ValueError("truststore-password is no longer read: catalogd does not hand the "
                             "truststore's password out; export it where Hive clients run, in the variable "
                             "named by server.tls.truststore-password-env (default CATALOGD_TRUSTSTORE_PASSWORD)")
        return data

    @field_validator("cert", "key", "client_ca", "truststore")
    @classmethod
    def _check_file(cls, value: Path | None, info: Any) -> Path | None:
        if value is None:
            return None
        what = {"cert": "certificate file", "key": "key file", "client_ca": "client CA file",
                "truststore": "truststore file"}[info.field_name]
        path = _readable_file(value, what)
        if info.field_name == "key" and path.stat().st_mode & 0o077:
            raise ValueError(f"key file {str(path)!r} is readable by group or others "
                             f"(mode {path.stat().st_mode & 0o777:o}): chmod 600 it")
        return path


class ServerConfig(_Model):
    """Where the daemon listens and keeps its state."""

    host: str = "127.0.0.1"
    port: Port = 9190
    http_port: Port = Field(default=9191, alias="http-port")
    #: The Hive Metastore endpoint (ThriftHiveMetastore for every catalog); 0 picks a free port.
    hms_port: Port = Field(default=9083, alias="hms-port")
    #: How long a metastore lock taken through the endpoint lives without a heartbeat: the
    #: ``hive.txn.timeout`` of every embedded metastore (whose transaction tables keep the locks
    #: of a hive default catalog; daemons sharing a database should agree on it), and the
    #: timeout of catalogd's in-memory locks (a memory default). A remote HMS keeps its own.
    hms_lock_timeout: Annotated[Duration, AtMost(_DAY)] = Field(
        default=datetime.timedelta(minutes=5), alias="hms-lock-timeout"
    )
    #: The most components (locked objects) one lock request through the endpoint may name.
    hms_max_lock_components: PositiveInt = Field(default=10_000, alias="hms-max-lock-components")
    #: The most lock components (held or waiting) the locks taken on one HMS connection may have
    #: (until they are unlocked or expire, also after the connection closed). Only where catalogd
    #: holds the locks in memory (a memory default catalog), as are the two bounds below.
    hms_max_locks_per_connection: PositiveInt = Field(default=50_000, alias="hms-max-locks-per-connection")
    #: With auth on: the most lock components (held or waiting) one principal may have over all
    #: its connections, so that one principal cannot take the whole ``hms-max-locks``.
    hms_max_locks_per_principal: PositiveInt = Field(default=100_000, alias="hms-max-locks-per-principal")
    #: The most lock components (held or waiting) of every client together: the memory the lock
    #: keeper may take (about 1 KiB a component).
    hms_max_locks: PositiveInt = Field(default=1_000_000, alias="hms-max-locks")
    #: Bytes all HMS endpoint connections may hold together for calls partly received or running;
    #: also the largest call (at most 256 MiB, the endpoint's bound on one message).
    hms_max_buffered_bytes: PositiveInt = Field(default=256 * 1024 * 1024, alias="hms-max-buffered-bytes")
    #: The longest view text (original or expanded, in bytes) a create or alter through the HMS endpoint may carry.
    hms_max_view_text: PositiveInt = Field(default=256 * 1024, alias="hms-max-view-text")
    #: The longest one view text's parse may take (longer texts run in a worker process that is
    #: killed at the bound): a create or alter is refused past it, a read returns the text as stored.
    hms_view_parse_timeout: Annotated[Duration, AtMost(_HOUR)] = Field(
        default=datetime.timedelta(seconds=10), alias="hms-view-parse-timeout"
    )
    data_dir: Path = Field(default=Path("~/.catalogd"), alias="data-dir", validate_default=True)
    max_frame_size: PositiveInt = Field(default=16 * 1024 * 1024, alias="max-frame-size")
    #: Thrift calls run at the same time (the worker pool); connections are not limited by it.
    workers: PositiveInt = 32
    #: Connections open at once on the Thrift API and on the HMS endpoint, each (TLS handshakes
    #: in progress count); at the cap a new one closes the connection in its handshake the
    #: longest, else the one idle the longest.
    max_connections: PositiveInt = Field(default=1000, alias="max-connections")
    #: A Thrift connection with no frame arriving and no call running is closed after this long.
    idle_timeout: Annotated[Duration, AtMost(_DAY)] = Field(default=datetime.timedelta(minutes=5), alias="idle-timeout")
    #: A Thrift frame must arrive whole (and a reply be taken) within this long of its first byte.
    frame_timeout: Annotated[Duration, AtMost(_HOUR)] = Field(
        default=datetime.timedelta(seconds=30), alias="frame-timeout"
    )
    #: Request bytes all Thrift connections may hold in memory together (partial frames and calls running).
    max_buffered_bytes: PositiveInt = Field(default=64 * 1024 * 1024, alias="max-buffered-bytes")
    log_level: Annotated[Literal["debug", "info", "warning", "error"], BeforeValidator(lower)] = Field(
        default="info", alias="log-level"
    )
    #: TLS on every port (None: plain TCP).
    tls: TlsConfig | None = None
    #: How long a shutdown waits for each thing it stops (requests, refresh runs, streaming jobs,
    #: the metastore) before it forces it.
    shutdown_grace: Annotated[NonNegativeDuration, AtMost(_HOUR)] = Field(
        default=datetime.timedelta(seconds=10), alias="shutdown-grace"
    )

    @field_validator("host")
    @classmethod
    def _check_host(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("data_dir", mode="before")
    @classmethod
    def _check_data_dir(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("data_dir")
    @classmethod
    def _absolute_data_dir(cls, value: Path) -> Path:
        try:
            value = value.expanduser()
        except RuntimeError as exc:
            raise ValueError(f"cannot expand '~' in {str(value)!r}: {exc}") from None
        value = value if value.is_absolute() else Path.cwd() / value
        # The daemon creates it (and its parents) at start: what exists on the way must be a directory,
        # so that `config check` refuses what `serve` could not use (/dev/null, a regular file).
        for existing in (value, *value.parents):
            try:
                info = existing.stat()
            except (FileNotFoundError, NotADirectoryError):  # a file on the way is found at its own level
                continue
            except OSError as exc:
                raise ValueError(f"cannot use {str(value)!r}: {exc.strerror or exc}") from None
            if not stat.S_ISDIR(info.st_mode):
                what = "it" if existing == value else repr(str(existing))
                raise ValueError(f"{str(value)!r} is not a directory ({what} is a {_file_kind(info.st_mode)}): "
                                 "give a directory, or a path where one can be made")
            break
        return value

    @model_validator(mode="before")
    @classmethod
    def _no_per_client_locks(cls, data: Any) -> Any:
        # The bound of issue 21 counted a client host's locks: one client on a host locked out every
        # other one there (issue 31). Refused with the way out, not ignored.
        if isinstance(data, dict) and ("hms-max-locks-per-client" in data or "hms_max_locks_per_client" in data):
            raise ValueError("hms-max-locks-per-client is no longer read (it bounded a whole client host): "
                             "use hms-max-locks-per-connection and hms-max-locks-per-principal (and hms-max-locks)")
        return data

    @model_validator(mode="after")
    def _distinct_ports(self) -> ServerConfig:
        named = [("port", self.port), ("http-port", self.http_port), ("hms-port", self.hms_port)]
        for index, (name, value) in enumerate(named):
            for other, other_value in named[index + 1:]:
                if value != 0 and value == other_value:
                    raise ValueError(f"{name} and {other} are both {value}: use different ports")
        return self

    @model_validator(mode="after")
    def _buffer_holds_a_frame(self) -> ServerConfig:
        if self.max_buffered_bytes < self.max_frame_size:
            raise ValueError(f"max-buffered-bytes ({self.max_buffered_bytes}) is smaller than max-frame-size "
                             f"({self.max_frame_size}): a largest frame could never arrive; raise it")
        return self


class ClusterMember(_Model):
    """One daemon of a deployment, as clients reach it."""

    #: The member's host name or address, as clients (and Spark) reach it.
    host: str
    #: Its Thrift API port (``server.port`` in its config).
    port: Port = 9190
    #: Its HMS endpoint port (``server.hms-port``): ``spark-conf`` lists every member's.
    hms_port: Port = Field(default=9083, alias="hms-port")
    #: Its HTTP port (``server.http-port``).
    http_port: Port = Field(default=9191, alias="http-port")

    @field_validator("host")
    @classmethod
    def _check_host(cls, value: str) -> str:
        if not value.strip() or "," in value or "/" in value:
            raise ValueError("must be a host name or address")
        return value.strip()

    @model_validator(mode="after")
    def _fixed_ports(self) -> ClusterMember:
        for name, value in (("port", self.port), ("hms-port", self.hms_port), ("http-port", self.http_port)):
            if value == 0:
                raise ValueError(f"{name} is 0: a member's clients need its fixed port")
        return self

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def hms_uri(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"thrift://{host}:{self.hms_port}"


class ClusterConfig(_Model):
    """The daemons of one deployment (this one included): what ``spark-conf`` and clients fail over across."""

    #: Every daemon of the deployment, this one included (matched by its three ports).
    members: list[ClusterMember] = Field(default_factory=list)
    #: How long a silent leader keeps the lease for background work (janitor, dynamic tables):
    #: another member takes over about 2x this after the leader dies or hangs.
    lease: Annotated[Duration, AtMost(datetime.timedelta(minutes=1))] = datetime.timedelta(seconds=3)
    #: How long a write waits, before it is acknowledged, for the other members to take its cache
    #: invalidation (0: it does not wait; a member that does not answer is not waited for again).
    invalidation_wait: Annotated[Duration, AtMost(datetime.timedelta(seconds=10))] = Field(
        default=datetime.timedelta(milliseconds=500), alias="invalidation-wait")

    @field_validator("lease")
    @classmethod
    def _lease_long_enough(cls, value: datetime.timedelta) -> datetime.timedelta:
        if value < datetime.timedelta(seconds=1):
            raise ValueError("must be at least 1s (the leader renews it every sixth of it)")
        return value

    @field_validator("members", mode="before")
    @classmethod
    def _members_none(cls, value: object) -> object:
        return [] if value is None else value

    @field_validator("members")
    @classmethod
    def _distinct_members(cls, value: list[ClusterMember]) -> list[ClusterMember]:
        seen: set[tuple[str, int]] = set()
        for member in value:
            key = (member.host.lower(), member.port)
            if key in seen:
                raise ValueError(f"{member.address} is listed twice")
            seen.add(key)
        return value

    @property
    def hms_uris(self) -> str:
        """``thrift://a:9083,thrift://b:9083``: every member's HMS endpoint, in order."""
        return ",".join(m.hms_uri for m in self.members)

    @property
    def addresses(self) -> str:
        """``a:9190,b:9190``: every member's Thrift API, as ``--server`` takes it."""
        return ",".join(m.address for m in self.members)

    def own(self, port: int, hms_port: int, http_port: int) -> ClusterMember | None:
        """The member with these three ports (this daemon's), if any."""
        return next((m for m in self.members if (m.port, m.hms_port, m.http_port) == (port, hms_port, http_port)),
                    None)


_URIS_KEY = "hive.metastore.uris"
_CONNECT_TIMEOUT_KEY = "hive.metastore.connect.timeout"
_SOCKET_TIMEOUT_KEY = "hive.metastore.client.socket.timeout"
_SASL_KEY = "hive.metastore.sasl.enabled"
_KERBEROS_PRINCIPAL_KEY = "hive.metastore.kerberos.principal"
_KERBEROS_KEYTAB_KEY = "hive.metastore.kerberos.keytab.file"
_KNOWN_CONNECTION_KEYS = (
    _URIS_KEY,
    "hive.metastore.username",
    _CONNECT_TIMEOUT_KEY,
    _SOCKET_TIMEOUT_KEY,
    _SASL_KEY,
    _KERBEROS_PRINCIPAL_KEY,
    _KERBEROS_KEYTAB_KEY,
)
_DURATION_KEYS = {
    _CONNECT_TIMEOUT_KEY: datetime.timedelta(seconds=5),
    _SOCKET_TIMEOUT_KEY: datetime.timedelta(seconds=60),
}
#: The longest each connection duration may be (a connect that takes an hour is a dead metastore).
_DURATION_MAXIMA = {
    _CONNECT_TIMEOUT_KEY: AtMost(datetime.timedelta(hours=1)),
    _SOCKET_TIMEOUT_KEY: AtMost(datetime.timedelta(days=1)),
}
_EMBEDDED = "embedded"
_URIS_FORMS = "'embedded' or a comma-separated list such as 'thrift://h1:9083,thrift://h2:9083'"


def _uri_problems(value: str) -> list[str]:
    """What is wrong with a ``hive.metastore.uris`` value (nothing when it is valid)."""
    if value.strip().lower() == _EMBEDDED:
        return []
    if not value.strip():
        return [f"empty value: expected {_URIS_FORMS}"]
    problems: list[str] = []
    for position, part in enumerate(value.split(",")):
        uri = part.strip()
        if not uri:
            problems.append(f"empty URI at position {position + 1}: expected {_URIS_FORMS}")
            continue
        if uri.lower() == _EMBEDDED:
            problems.append("'embedded' cannot be combined with thrift:// URIs")
            continue
        split = urlsplit(uri)
        try:
            port = split.port
        except ValueError:
            problems.append(f"invalid URI {uri!r}: the port must be a number between 1 and 65535")
            continue
        if split.scheme.lower() != "thrift" or not split.netloc:
            problems.append(f"invalid URI {uri!r}: expected thrift://host:port ({_URIS_FORMS})")
        elif not split.hostname:
            problems.append(f"invalid URI {uri!r}: the host is missing")
        elif port is None or port == 0:
            problems.append(
                f"invalid URI {uri!r}: the port is missing (the metastore usually listens on 9083)"
            )
        elif split.path not in ("", "/") or split.query or split.fragment:
            problems.append(f"invalid URI {uri!r}: expected thrift://host:port with nothing after the port")
    return problems


#: The JDBC driver Spark writes a jdbc catalog's tables with: Debian's libpostgresql-jdbc-java.
DEFAULT_JDBC_DRIVER_JAR = Path("/usr/share/java/postgresql.jar")
#: Keys only a jdbc catalog takes (Flink's JDBC catalog options, and catalogd's own).
_JDBC_KEYS = ("base-url", "username", "password", "password-file", "default-schema", "driver-jar")


class CatalogConfig(_Model):
    """One catalog: a Hive Metastore (remote or embedded), an in-memory catalog, or a JDBC database."""

    name: str
    type: Annotated[Literal["hive", "memory", "jdbc"], BeforeValidator(lower)]
    default: bool = False
    #: hive, memory: the database names without one mean. jdbc (Flink's meaning): the
    #: PostgreSQL database the catalog serves; names without a database mean ``default-schema``.
    default_database: str = Field(default="default", alias="default-database")
    #: jdbc only: ``jdbc:postgresql://HOST:PORT`` (Flink's ``base-url``; no database, no credentials).
    base_url: str | None = Field(default=None, alias="base-url")
    #: jdbc only: the PostgreSQL role catalogd logs in as.
    username: str | None = None
    #: jdbc only: its password (give it as ``${VAR}``), or ``password-file``.
    password: SecretStr | None = None
    #: jdbc only: a file holding the password (mode 0600, the daemon user's), read at load.
    password_file: Path | None = Field(default=None, alias="password-file")
    #: jdbc only: the schema (catalogd database) names without a database mean.
    default_schema: str = Field(default="public", alias="default-schema")
    #: jdbc only: the JDBC driver jar Spark writes and reads the catalog's tables with.
    driver_jar: Path = Field(default=DEFAULT_JDBC_DRIVER_JAR, alias="driver-jar")
    connection: dict[str, str] = Field(default_factory=dict)
    warehouse: str | None = None
    #: URI prefixes where the catalog's databases, tables, partitions and stages may live and
    #: catalogd may delete files; None: the warehouse root. On a memory catalog: where its tables
    #: and partitions may be placed besides its scratch warehouse; None: anywhere.
    allowed_locations: list[str] | None = Field(default=None, alias="allowed-locations")
    read_only: bool = Field(default=False, alias="read-only")
    #: Whether ``catalogd.spark`` writes through stages (Flink's ``table.ctas.atomicity-enabled``);
    #: when false its helpers fall back to Spark's plain, non-atomic writes.
    atomic_writes: bool = Field(default=True, alias="atomic-writes")
    #: The port an embedded metastore listens on (0 picks a free port); only for ``embedded``.
    metastore_port: Port = Field(default=0, alias="metastore-port")
    #: Metastore calls of this catalog in flight at once; more fail at once with metastore-unavailable,
    #: so that a hung metastore never takes every thread of the daemon (only for hive catalogs).
    max_concurrent_calls: PositiveInt = Field(default=16, alias="max-concurrent-calls")
    #: What this catalog's database names start with on the HMS endpoint; None: ``<name>__``
    #: (none for the default catalog, whose databases keep their own names).
    hms_prefix: str | None = Field(default=None, alias="hms-prefix")
    #: The database of an embedded metastore: postgresql://USER:PASSWORD@HOST:PORT/DB; None: Derby under
    #: the data dir. Secret as a whole, because the URL may hold the password.
    metastore_db: SecretStr | None = Field(default=None, alias="metastore-db")
    #: A file holding the password of ``metastore-db`` (mode 0600, the daemon user's), read at load.
    metastore_db_password_file: Path | None = Field(default=None, alias="metastore-db-password-file")
    #: Remote hive catalogs only: the key file of the metastore it names when that is another catalogd's
    #: (or this one's) embedded metastore, which serves only connections that send its key first:
    #: ``<data-dir>/catalogs/<catalog>/conf/metastore.key`` of that daemon (same OS user). Read at each new
    #: connection (the key changes when that daemon restarts); None: a metastore that takes no key.
    metastore_key_file: Path | None = Field(default=None, alias="metastore-key-file")
    _metastore_db_password: SecretStr | None = PrivateAttr(default=None)
    _jdbc_password: SecretStr | None = PrivateAttr(default=None)

    @field_validator("hms_prefix")
    @classmethod
    def _check_hms_prefix(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value or not re.fullmatch(r"[a-z0-9_]+", value):
            raise ValueError(f"{value!r} is not a database name prefix: use lower-case letters, digits and '_' "
                             "(for example 'sales__')")
        return value

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return identifier(value, "catalog name")

    @field_validator("default_database", "default_schema")
    @classmethod
    def _check_default_database(cls, value: str) -> str:
        return identifier(value, "database name")

    @model_validator(mode="after")
    def _check_jdbc_rules(self) -> CatalogConfig:
        from catalogd.config.jdbc_url import parse_base_url

        problems: list[tuple[Loc, str]] = []
        # Keys given a value of their own (a dump of a config read back holds every key, at its default).
        given = {key for key in _JDBC_KEYS
                 if getattr(self, key.replace("-", "_")) != type(self).model_fields[key.replace("-", "_")].default}
        if self.type != "jdbc":
            problems.extend(((key,), "only a jdbc catalog takes this key") for key in sorted(given))
            if problems:
                raise problems_error(problems)
            return self
        if self.base_url is None:
            problems.append((("base-url",), "a jdbc catalog needs base-url: jdbc:postgresql://HOST:PORT"))
        else:
            try:
                parse_base_url(self.base_url)
            except ValueError as exc:
                problems.append((("base-url",), str(exc)))
        if "default_database" not in self.model_fields_set:
            problems.append((("default-database",), "a jdbc catalog needs the PostgreSQL database it serves"))
        if not self.username:
            problems.append((("username",), "a jdbc catalog needs the role catalogd logs in as"))
        if self.password is not None and self.password_file is not None:
            problems.append((("password-file",), "give the password or password-file, not both"))
        elif self.password_file is not None:
            try:
                self._jdbc_password = read_password_file(self.password_file, os.geteuid())
            except ValueError as exc:
                problems.append((("password-file",), str(exc)))
        if self.default:
            problems.append((("default",), "a jdbc catalog cannot be the default catalog: the HMS endpoint "
                                           "serves the default catalog's databases, and HMS clients cannot read "
                                           "a jdbc catalog"))
        for key, what in (("connection", self.connection), ("warehouse", self.warehouse),
                          ("allowed-locations", self.allowed_locations), ("metastore-db", self.metastore_db)):
            if what:
                problems.append(((key,), "a jdbc catalog takes no such key (its data is in PostgreSQL)"))
        if problems:
            raise problems_error(problems)
        return self

    @property
    def jdbc_password(self) -> SecretStr | None:
        """A jdbc catalog's password (``password``, or read from ``password-file``)."""
        return self.password if self.password is not None else self._jdbc_password

    @property
    def default_namespace(self) -> str:
        """The database names without one mean: ``default-schema`` for jdbc, else ``default-database``."""
        return self.default_schema if self.type == "jdbc" else self.default_database

    @field_validator("allowed_locations")
    @classmethod
    def _check_allowed_locations(cls, value: list[str] | None) -> list[str] | None:
        for uri in value or []:
            if not uri.strip() or "/" not in uri:
                raise ValueError(f"{uri!r} is not a location: give URI prefixes like file:///data/lake "
                                 "or hdfs://namenode:8020/warehouse")
        return value

    @field_validator("connection", mode="before")
    @classmethod
    def _check_connection(cls, value: object) -> dict[str, str]:
        result, problems = string_map(value, "'hive.*' settings")
        for key, item in result.items():
            if not key.startswith("hive."):
                problems.append(
                    (
                        (key,),
                        f"unknown connection key {key!r}: connection keys start with 'hive.'"
                        + suggest(key, _KNOWN_CONNECTION_KEYS),
                    )
                )
            elif key == _URIS_KEY:
                problems.extend(((key,), problem) for problem in _uri_problems(item))
            elif key == _SASL_KEY and item.strip().lower() not in ("true", "false"):
                problems.append(((key,), f"{item!r} is not true or false"))
            elif key == _KERBEROS_PRINCIPAL_KEY and not _KRB_PRINCIPAL_RE.fullmatch(item.strip()):
                problems.append(((key,), f"invalid Kerberos principal {item!r}: use service/host@REALM "
                                         "(a _HOST host: the metastore's host name)"))
            elif key in _DURATION_KEYS:
                try:
                    _DURATION_MAXIMA[key].check(positive_duration(parse_duration(item)))
                except ValueError as exc:
                    problems.append(((key,), str(exc)))
            elif key not in _KNOWN_CONNECTION_KEYS:
                close = difflib.get_close_matches(key, _KNOWN_CONNECTION_KEYS, n=1, cutoff=0.9)
                if close:
                    logger.warning("connection key %r is passed on as is; did you mean %r?", key, close[0])
        if problems:
            raise problems_error(problems)
        return result

    @model_validator(mode="after")
    def _check_type_rules(self) -> CatalogConfig:
        problems: list[tuple[Loc, str]] = []
        if self.type == "jdbc":
            pass  # its own rules: _check_jdbc_rules
        elif self.type == "memory":
            if self.connection:
                problems.append((("connection",), "a memory catalog takes no connection settings"))
            if self.warehouse is not None:
                problems.append((("warehouse",), "a memory catalog has no warehouse"))
        elif _URIS_KEY not in self.connection:
            close = difflib.get_close_matches(_URIS_KEY, list(self.connection), n=1, cutoff=0.8)
            hint = f" (is {close[0]!r} a misspelling?)" if close else ""
            problems.append((("connection",), f"a hive catalog needs {_URIS_KEY!r}: {_URIS_FORMS}{hint}"))
        if self.metastore_port and not self.is_embedded:
            problems.append(
                (("metastore-port",), f"only used by an embedded metastore ({_URIS_KEY}: embedded)")
            )
        if self.sasl_enabled and _KERBEROS_PRINCIPAL_KEY not in self.connection:
            problems.append((("connection",), f"{_SASL_KEY}: true needs {_KERBEROS_PRINCIPAL_KEY}, the "
                                              "metastore's service principal (hive/_HOST@REALM)"))
        if self.sasl_enabled and self.is_embedded and _KERBEROS_KEYTAB_KEY not in self.connection:
            problems.append((("connection",), f"an embedded metastore with {_SASL_KEY}: true needs "
                                              f"{_KERBEROS_KEYTAB_KEY}, the keytab of its service principal"))
        if _KERBEROS_KEYTAB_KEY in self.connection and not self.is_embedded:
            problems.append((("connection", _KERBEROS_KEYTAB_KEY),
                             "only used by an embedded metastore (a remote one has its own keytab; catalogd "
                             "logs in with auth.kerberos)"))
        if problems:
            raise problems_error(problems)
        return self

    @property
    def sasl_enabled(self) -> bool:
        """Whether the metastore is kerberized (``hive.metastore.sasl.enabled: true``)."""
        return self.type == "hive" and self.connection.get(_SASL_KEY, "false").strip().lower() == "true"

    @property
    def metastore_principal(self) -> str:
        """The kerberized metastore's service principal (``hive.metastore.kerberos.principal``)."""
        return self.connection.get(_KERBEROS_PRINCIPAL_KEY, "").strip()

    @field_validator("metastore_db")
    @classmethod
    def _check_metastore_db(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_metastore_db(value.get_secret_value())
        return value

    @field_validator("metastore_db_password_file", "password_file", "metastore_key_file")
    @classmethod
    def _absolute_password_file(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        value = value.expanduser()
        return value if value.is_absolute() else Path.cwd() / value

    @model_validator(mode="after")
    def _check_metastore_db_rules(self) -> CatalogConfig:
        problems: list[tuple[Loc, str]] = []
        if self.metastore_db is not None and not self.is_embedded:
            problems.append((("metastore-db",), f"only used by an embedded metastore ({_URIS_KEY}: embedded)"))
        if self.metastore_key_file is not None and (self.type != "hive" or self.is_embedded):
            problems.append((("metastore-key-file",), "only used by a hive catalog on a remote metastore (an "
                                                      "embedded one makes its own key)"))
        file = self.metastore_db_password_file
        if file is not None and self.metastore_db is None:
            problems.append((("metastore-db-password-file",), f"only used with metastore-db ({METASTORE_DB_FORM})"))
        elif file is not None and self.metastore_db is not None:
            if parse_metastore_db(self.metastore_db.get_secret_value()).password is not None:
                problems.append((("metastore-db-password-file",),
                                 "metastore-db has a password already: give it there or in this file, not both"))
            else:
                try:
                    self._metastore_db_password = read_password_file(file, os.geteuid())
                except ValueError as exc:
                    problems.append((("metastore-db-password-file",), str(exc)))
        if problems:
            raise problems_error(problems)
        return self

    @property
    def metastore_database(self) -> PostgresDatabase | None:
        """The PostgreSQL database of an embedded metastore, its password included; None: Derby."""
        if self.metastore_db is None or not self.is_embedded:
            return None
        database = parse_metastore_db(self.metastore_db.get_secret_value())
        return database if database.password is not None else database.with_password(self._metastore_db_password)

    @property
    def is_embedded(self) -> bool:
        """Whether catalogd runs the metastore itself (``hive.metastore.uris: embedded``)."""
        uris = self.connection.get(_URIS_KEY, "")
        return self.type == "hive" and uris.strip().lower() == _EMBEDDED

    @property
    def uris(self) -> list[str]:
        """The ``thrift://host:port`` metastore URIs, in order; empty for embedded and memory catalogs."""
        if self.type != "hive" or self.is_embedded:
            return []
        return [part.strip() for part in self.connection.get(_URIS_KEY, "").split(",") if part.strip()]

    @property
    def connect_timeout(self) -> datetime.timedelta:
        """``hive.metastore.connect.timeout`` (default 5s)."""
        return self._duration_setting(_CONNECT_TIMEOUT_KEY)

    @property
    def socket_timeout(self) -> datetime.timedelta:
        """``hive.metastore.client.socket.timeout`` (default 60s)."""
        return self._duration_setting(_SOCKET_TIMEOUT_KEY)

    def _duration_setting(self, key: str) -> datetime.timedelta:
        text = self.connection.get(key)
        return _DURATION_KEYS[key] if text is None else parse_duration(text)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (redact(value) if name == "connection" else value)


class DynamicTablesConfig(_Model):
    """Dynamic (derived) tables."""

    #: A freshness below this gets the CONTINUOUS refresh mode, else FULL (unless a
    #: table asks for a mode). A changed threshold re-derives the modes on restart.
    freshness_threshold: Annotated[Duration, AtMost(datetime.timedelta(days=365))] = Field(
        default=datetime.timedelta(minutes=30), alias="freshness-threshold"
    )
    #: The freshness of a table created without FRESHNESS (FLIP-551) whose refresh mode is,
    #: or is derived as, CONTINUOUS (with no REFRESH_MODE either, the mode is derived from
    #: this freshness and the threshold).
    default_freshness_continuous: Annotated[Duration, AtMost(datetime.timedelta(days=365))] = Field(
        default=datetime.timedelta(minutes=3), alias="default-freshness-continuous"
    )
    #: The freshness of a table created without FRESHNESS but with REFRESH_MODE = FULL; it
    #: must be a FULL schedule (1-30 s or min dividing 60, 1-12 h dividing 24, or 1 day).
    default_freshness_full: Annotated[Duration, AtMost(datetime.timedelta(days=1))] = Field(
        default=datetime.timedelta(hours=1), alias="default-freshness-full"
    )
    #: Run the schedules and jobs of dynamic tables on this daemon. Turn it off on all
    #: but one daemon sharing a metastore (each would run every refresh).
    enabled: bool = True
    #: Start the default catalog's Spark analyzer (it checks CREATE DYNAMIC TABLE queries)
    #: in the background when the daemon starts, so the first create finds it warm; false:
    #: on first use (saves a JVM when no dynamic table is created).
    warm_analyzer: bool = Field(default=True, alias="warm-analyzer")
    #: The zone of cron fire times and of schedule times given without an offset.
    time_zone: str = Field(default="UTC", alias="time-zone")
    #: Batch refresh jobs running at once; more wait (PENDING).
    max_concurrent_refreshes: PositiveInt = Field(default=2, alias="max-concurrent-refreshes")
    #: Refreshes of one table requested (REST, Thrift, CLI, console) and waiting for a worker at
    #: once; one more is refused (HTTP 429 with Retry-After, a conflict on Thrift) until one
    #: starts. A request for a partition already waiting or running joins that run instead.
    #: Tables take turns for the workers, so one table's queue never delays another's refresh.
    max_queued_refreshes_per_table: PositiveInt = Field(default=100, alias="max-queued-refreshes-per-table")
    #: Runs kept in each table's history.
    history_size: PositiveInt = Field(default=50, alias="history-size")
    #: A batch refresh running longer is stopped and recorded FAILED.
    refresh_timeout: Annotated[Duration, AtMost(_WEEK)] = Field(
        default=datetime.timedelta(hours=2), alias="refresh-timeout"
    )

    @field_validator("default_freshness_continuous", "default_freshness_full")
    @classmethod
    def _check_whole_seconds(cls, value: datetime.timedelta) -> datetime.timedelta:
        if value.microseconds:
            raise ValueError(f"a freshness is a whole number of seconds, got {format_duration(value)}")
        return value

    @field_validator("default_freshness_full")
    @classmethod
    def _check_schedulable(cls, value: datetime.timedelta) -> datetime.timedelta:
        # As catalogd.dynamic.freshness.cron_expression: the amount divides the next larger unit.
        seconds = int(value.total_seconds())
        if not any(seconds % unit == 0 and seconds // unit <= bound and bound % (seconds // unit) == 0
                   for unit, bound in ((1, 60), (60, 60), (3600, 24), (86400, 1))):
            raise ValueError(f"{format_duration(value)} cannot be a FULL refresh schedule: use 1, 2, 3, 4, 5, 6, "
                             "10, 12, 15, 20 or 30 s or min, 1, 2, 3, 4, 6, 8 or 12 h, or 1 day")
        return value

    @field_validator("time_zone")
    @classmethod
    def _check_zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (use an IANA name like UTC or Europe/Berlin)") from None
        return value


class SparkConfig(_Model):
    """The Spark session catalogd uses to run jobs."""

    master: str = "local[2]"
    conf: dict[str, str] = Field(default_factory=dict)
    #: Where dynamic-table refreshes run: ``submit`` (the default), a ``spark-submit``
    #: application per run, or ``connect``, a session per run in a long-lived Spark
    #: Connect server (catalogd's own, or ``remote``'s). submit is the default because it
    #: costs nothing between runs and keeps each run in a JVM of its own; connect pays a
    #: resident server (about 1 GB) to make each refresh many times cheaper.
    engine: Annotated[Literal["connect", "submit"], BeforeValidator(lower)] = "submit"
    #: An existing Spark Connect server (``sc://host:port``, with ``/;token=...`` if it
    #: wants one) for the connect engine; unset: catalogd starts and supervises its own.
    remote: str | None = None
    #: The port of catalogd's own Connect server (0: any free port, bound on 127.0.0.1).
    connect_port: Annotated[int, Field(ge=0, le=65535)] = Field(default=0, alias="connect-port")
    #: Warm catalogd's own Connect server up when it starts, before it hands out sessions:
    #: a few small refreshes' worth of work in a session of its own (a query with a partition
    #: filter, a partition overwrite of parquet files into a scratch directory of the server's
    #: work dir, removed after), so the first runs do not pay the JVM's class loading and JIT.
    #: The first run after a start waits a few seconds more; a failed warm-up is logged and the
    #: server used all the same. Not for ``remote`` servers, nor a non-local ``master``.
    connect_warmup: bool = Field(default=True, alias="connect-warmup")

    @field_validator("remote")
    @classmethod
    def _check_remote(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("sc://") or not urlsplit(value).hostname):
            raise ValueError(f"expected a Spark Connect URL sc://HOST:PORT, got {value!r}")
        return value

    @field_validator("conf", mode="before")
    @classmethod
    def _check_conf(cls, value: object) -> dict[str, str]:
        result, problems = string_map(value, "Spark settings")
        if problems:
            raise problems_error(problems)
        return result

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (redact(value) if name == "conf" else value)


_MIN_SECRET = 16


class StagingConfig(_Model):
    """Stages (staging tables) handed out to writers: atomic writes."""

    #: How long a stage stays open without a heartbeat; a writer may ask for another length.
    lease: Annotated[Duration, AtMost(_DAY)] = datetime.timedelta(seconds=60)
    #: How often the janitor aborts stages whose lease lapsed and finishes interrupted commits.
    janitor_interval: Annotated[Duration, AtMost(_HOUR)] = Field(
        default=datetime.timedelta(seconds=10), alias="janitor-interval"
    )
    #: The longest lease a writer may ask for, at begin or heartbeat.
    max_lease: Annotated[Duration, AtMost(_WEEK)] = Field(default=datetime.timedelta(hours=1), alias="max-lease")
    #: How long the files a REPLACE or partition overwrite replaced are kept, so that
    #: queries planned before the commit can finish reading them (0s: delete at once).
    replaced_data_retention: Annotated[NonNegativeDuration, AtMost(datetime.timedelta(days=30))] = Field(
        default=datetime.timedelta(minutes=10), alias="replaced-data-retention"
    )
    #: At most this many replaced versions are kept per table; a commit past it deletes
    #: the oldest before its retention is over (bounds the storage of busy tables).
    max_retired_versions: PositiveInt = Field(default=10, alias="max-retired-versions")
    #: The key that signs stages (HMAC), so that catalogd acts only on stages it created.
    #: Unset: a key generated once into <data-dir>/secrets/stage.key. Daemons sharing a
    #: metastore must share it.
    secret: SecretStr | None = None

    @field_validator("secret")
    @classmethod
    def _check_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().strip()) < _MIN_SECRET:
            raise ValueError(f"must be at least {_MIN_SECRET} characters (e.g. the output of `openssl rand -hex 32`)")
        return value

    @model_validator(mode="after")
    def _lease_within_cap(self) -> StagingConfig:
        if self.lease > self.max_lease:
            raise ValueError(f"lease ({format_duration(self.lease)}) is longer than max-lease "
                             f"({format_duration(self.max_lease)}): shorten the lease or raise max-lease")
        return self


def hms_prefix_of(catalog: CatalogConfig) -> str:
    """The prefix of ``catalog``'s database names on the HMS endpoint ('' for none)."""
    if catalog.hms_prefix is not None:
        return catalog.hms_prefix
    return "" if catalog.default else f"{catalog.name}__"


def _prefix_problems(catalogs: Sequence[CatalogConfig]) -> list[str]:
    """Prefixes that would make one HMS database name mean two catalogs."""
    problems: list[str] = []
    prefixes = [(c.name, hms_prefix_of(c)) for c in catalogs]
    for index, (name, prefix) in enumerate(prefixes):
        if not prefix and not next(c for c in catalogs if c.name == name).default:
            problems.append(f"catalog {name!r}: hms-prefix must not be empty (only the default catalog's "
                            "databases keep their own names)")
        for other, other_prefix in prefixes[index + 1:]:
            if not prefix or not other_prefix:
                continue
            if prefix.startswith(other_prefix) or other_prefix.startswith(prefix):
                problems.append(f"catalogs {name!r} and {other!r} have clashing hms-prefix values "
                                f"({prefix!r}, {other_prefix!r}): a database name would belong to both; "
                                "give each a prefix that does not start with the other")
    return problems


def _catalog_set_problems(names: Sequence[str | None], defaults: Sequence[bool | None]) -> list[str]:
    """Problems with the catalogs as a whole; a ``None`` name or default is one that is invalid."""
    problems: list[str] = []
    first_seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if name is None:
            continue
        if name in first_seen:
            problems.append(
                f"two catalogs named {name!r} (catalogs[{first_seen[name]}] and catalogs[{index}])"
            )
        else:
            first_seen[name] = index
    marked = [f"catalogs[{index}]" for index, flag in enumerate(defaults) if flag is True]
    if len(marked) >= 2:
        listed = ", ".join(marked[:-1]) + " and " + marked[-1]
        both = "both" if len(marked) == 2 else "all"
        problems.append(f"{listed} are {both} marked 'default: true': mark only one")
    elif not marked and len(defaults) > 1 and None not in defaults:
        problems.append("no default catalog: mark one with 'default: true'")
    return problems


class CacheConfig(_Model):
    """The metadata cache in front of the hive catalogs' metastores (databases, tables, partitions)."""

    #: How long a cached answer is served; what catalogd writes is invalidated at once (on
    #: every member of ``cluster.members`` too), what others write on the metastore directly
    #: shows within this long. 0s turns the cache off.
    ttl: Annotated[NonNegativeDuration, AtMost(_DAY)] = datetime.timedelta(seconds=1)
    #: The most answers kept, over all catalogs; the least recently used go first.
    max_entries: PositiveInt = Field(default=10000, alias="max-entries")
    #: The most bytes of answers kept (their encoded size), over all catalogs.
    max_bytes: PositiveInt = Field(default=128 * 1024 * 1024, alias="max-bytes")


_PRINCIPAL_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]*")
_MAX_NAME = 128
#: Names a configured principal cannot take: what an unauthenticated caller and a refresh job are called.
_RESERVED_PRINCIPALS = ("anonymous",)
_JOB_PRINCIPAL_PREFIX = "job:"


def _read_token_file(path: Path) -> str:
    """The token in ``path``: a regular file readable by its owner only (0600 or stricter)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ValueError(f"token file {str(path)!r} does not exist") from None
    except OSError as exc:
        raise ValueError(f"token file {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"token file {str(path)!r} is not a regular file")
    if info.st_mode & 0o077:
        raise ValueError(f"token file {str(path)!r} is readable by group or others "
                         f"(mode {stat.S_IMODE(info.st_mode):o}): run chmod 600 on it")
    try:
        # A trailing newline (echo ... > file) is not part of the token.
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"token file {str(path)!r} cannot be read: {exc}") from None


class PrincipalConfig(_Model):
    """One caller that may authenticate: a name and its token (inline or in a file); no token: HMS endpoint only."""

    name: str
    token: SecretStr | None = None
    #: A file holding the token, read when the configuration is loaded; must be mode 0600.
    token_file: Path | None = Field(default=None, alias="token-file")
    _file_token: SecretStr | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        value = value.strip()
        if not _PRINCIPAL_RE.fullmatch(value) or len(value) > _MAX_NAME:
            raise ValueError(f"invalid principal name {value!r}: use letters, digits, '_', '.', '@' and '-'")
        if value.lower() in _RESERVED_PRINCIPALS or value.lower().startswith(_JOB_PRINCIPAL_PREFIX):
            raise ValueError(f"{value!r} is reserved: choose another principal name")
        return value

    @field_validator("token")
    @classmethod
    def _check_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().strip()) < _MIN_SECRET:
            raise ValueError(f"must be at least {_MIN_SECRET} characters (e.g. the output of `openssl rand -hex 32`)")
        return value

    @field_validator("token_file")
    @classmethod
    def _absolute_token_file(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        value = value.expanduser()
        return value if value.is_absolute() else Path.cwd() / value

    @model_validator(mode="after")
    def _load_token_file(self) -> PrincipalConfig:
        if self.token is not None and self.token_file is not None:
            raise ValueError("give either token or token-file, not both")
        if self.token_file is not None:
            token = _read_token_file(self.token_file)
            if len(token) < _MIN_SECRET:
                raise ValueError(f"the token in {str(self.token_file)!r} must be at least {_MIN_SECRET} characters")
            self._file_token = SecretStr(token)
        return self

    @property
    def secret(self) -> SecretStr | None:
        """The principal's token (from ``token`` or ``token-file``); None: it has none."""
        return self.token if self.token is not None else self._file_token


class GrantConfig(_Model):
    """A role a principal holds on one catalog, or on every catalog (``*``)."""

    principal: str
    catalog: str
    role: Annotated[Literal["reader", "writer", "admin"], BeforeValidator(lower)]

    @field_validator("catalog")
    @classmethod
    def _check_catalog(cls, value: str) -> str:
        return "*" if value.strip() == "*" else identifier(value, "catalog name")


class AuditConfig(_Model):
    """The audit log (<data-dir>/audit/audit.jsonl and audit-denied.jsonl): rotation and coalescing of denials."""

    #: audit.jsonl (writes: ok and error) is rotated when a line would take it past this size.
    max_bytes: PositiveInt = Field(default=10 * 1024 * 1024, alias="max-bytes")
    #: Rotated files of audit.jsonl kept (audit.jsonl.1 ...); 0: none.
    backups: NonNegativeInt = 5
    #: audit-denied.jsonl (denials) is rotated past this size, on its own budget, so that a flood
    #: of denials never rotates writes away.
    denied_max_bytes: PositiveInt = Field(default=10 * 1024 * 1024, alias="denied-max-bytes")
    #: Rotated files of audit-denied.jsonl kept; 0: none.
    denied_backups: NonNegativeInt = Field(default=5, alias="denied-backups")
    #: Denials repeated by one client (same address, principal, operation, object and message)
    #: within this long are one line with a count; the first is written at once. 0s: every denial a line.
    denial_window: Annotated[NonNegativeDuration, AtMost(_HOUR)] = Field(
        default=datetime.timedelta(seconds=10), alias="denial-window")


class ThrottleConfig(_Model):
    """Failed authentications on every port (tokens, SASL, certificates) slow the next tries of the same credential
    from the same address; other credentials, from there or anywhere, are checked as usual."""

    #: Failures of one credential from one client address that cost nothing; each further one locks that pair out.
    free_attempts: NonNegativeInt = Field(default=5, alias="free-attempts")
    #: The first lockout; each further failure doubles it. 0s: no throttling.
    base_delay: Annotated[NonNegativeDuration, AtMost(_HOUR)] = Field(
        default=datetime.timedelta(seconds=1), alias="base-delay")
    #: The longest lockout.
    max_delay: Annotated[NonNegativeDuration, AtMost(_DAY)] = Field(
        default=datetime.timedelta(minutes=1), alias="max-delay")
    #: A credential and address without a failure for this long start over.
    forget_after: Annotated[Duration, AtMost(_DAY)] = Field(
        default=datetime.timedelta(minutes=10), alias="forget-after")


def _check_rules(rules: list[str]) -> list[str]:
    """``PATTERN -> REPLACEMENT`` rules (catalogd.auth.mapping applies them)."""
    for rule in rules:
        pattern, sep, _ = rule.partition(" -> ")
        if not sep:
            raise ValueError(f"rule {rule!r} is not 'PATTERN -> REPLACEMENT'")
        try:
            re.compile(pattern)
        except re.error as e:
            raise ValueError(f"rule {rule!r}: bad pattern: {e}") from None
    return rules


_KRB_PRINCIPAL_RE = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)?@[A-Za-z0-9._-]+")


class DelegationTokensConfig(_Model):
    """Delegation tokens the HMS endpoint issues to Kerberos-authenticated clients (SASL DIGEST-MD5 with them)."""

    #: The key that signs tokens; daemons that share it accept each other's tokens. Unset: a key
    #: generated once into <data-dir>/secrets/delegation.key (this daemon's tokens only).
    secret: SecretStr | None = None
    #: A token lives this long after it was issued or last renewed.
    renew_interval: Annotated[Duration, AtMost(datetime.timedelta(days=30))] = Field(
        default=datetime.timedelta(days=1), alias="renew-interval")
    #: No renewal keeps a token past this long after it was issued.
    max_lifetime: Annotated[Duration, AtMost(datetime.timedelta(days=365))] = Field(
        default=datetime.timedelta(days=7), alias="max-lifetime")

    @field_validator("secret")
    @classmethod
    def _check_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().strip()) < _MIN_SECRET:
            raise ValueError(f"must be at least {_MIN_SECRET} characters (e.g. the output of `openssl rand -hex 32`)")
        return value


class KerberosConfig(_Model):
    """Kerberos (SASL GSSAPI) on the HMS endpoint, as the Hive Metastore speaks it."""

    #: The endpoint's service principal, ``service/host@REALM`` (a ``_HOST`` host: this machine's name).
    principal: str
    #: The keytab holding the service principal's key; must be mode 0600.
    keytab: Path
    #: Rules mapping an authenticated Kerberos principal to a catalogd principal, tried in order:
    #: ``PATTERN -> REPLACEMENT`` (a regular expression matching the whole principal; ``\1`` in
    #: the replacement is its first group). None: ``user@REALM -> user`` for the service's own
    #: realm only. No rule matching: the connection is refused.
    principal_rules: list[str] = Field(default_factory=list, alias="principal-rules")
    #: The SASL quality of protection offered: auth (authentication only), auth-int (integrity),
    #: auth-conf (privacy), as hive.server2.thrift.sasl.qop / hadoop.rpc.protection name them.
    qop: list[Annotated[Literal["auth", "auth-int", "auth-conf"], BeforeValidator(lower)]] = Field(
        default_factory=lambda: ["auth-conf", "auth-int", "auth"])  # type: ignore[arg-type]
    #: Delegation tokens (get_delegation_token, SASL DIGEST-MD5), as a kerberized metastore issues them.
    delegation_tokens: DelegationTokensConfig = Field(default_factory=DelegationTokensConfig,
                                                      alias="delegation-tokens")

    @field_validator("principal")
    @classmethod
    def _check_principal(cls, value: str) -> str:
        value = value.strip()
        if not _KRB_PRINCIPAL_RE.fullmatch(value):
            raise ValueError(f"invalid Kerberos principal {value!r}: use service/host@REALM")
        return value

    @field_validator("keytab")
    @classmethod
    def _check_keytab(cls, value: Path) -> Path:
        value = value.expanduser()
        if not value.is_file():
            raise ValueError(f"keytab {str(value)!r} does not exist or is not a file")
        mode = value.stat().st_mode & 0o777
        if mode & 0o077:
            raise ValueError(f"keytab {str(value)!r} is readable by others (mode {mode:o}): chmod 600 it")
        return value

    @field_validator("principal_rules")
    @classmethod
    def _check_rules(cls, value: list[str]) -> list[str]:
        return _check_rules(value)

    @field_validator("delegation_tokens", mode="before")
    @classmethod
    def _empty_tokens(cls, value: object) -> object:
        return none_as_empty(value)

    @field_validator("qop")
    @classmethod
    def _check_qop(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("offer at least one of auth, auth-int, auth-conf")
        return value


class AuthConfig(_Model):
    """Who may do what: principals with tokens, and their roles per catalog."""

    #: Off (the default): every caller may do everything, as before authentication existed.
    enabled: bool = False
    #: Allow auth off on a non-loopback ``server.host`` (refused at start otherwise).
    allow_insecure: bool = Field(default=False, alias="allow-insecure")
    principals: list[PrincipalConfig] = Field(default_factory=list)
    grants: list[GrantConfig] = Field(default_factory=list)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    throttle: ThrottleConfig = Field(default_factory=ThrottleConfig)
    #: Kerberos on the HMS endpoint (absent: the endpoint takes set_ugi's user, or a client certificate's).
    kerberos: KerberosConfig | None = None
    #: With auth on: the highest role an HMS connection gets whose user is only asserted by
    #: ``set_ugi`` (no Kerberos ticket, client certificate or delegation token proved it). none
    #: (the default): such a connection may make no call; reader, writer or admin: it acts as the
    #: principal it names, with that principal's grants capped at this role. Anyone who can reach
    #: the HMS port can name any principal: trust only a network where that is acceptable.
    trust_asserted_users: Annotated[Literal["none", "reader", "writer", "admin"], BeforeValidator(lower)] = Field(
        default="none", alias="trust-asserted-users")
    #: With server.tls.client-ca: how a client certificate's subject becomes a principal on the
    #: HMS endpoint, ``PATTERN -> REPLACEMENT`` rules over the subject as ``CN=name,O=org``.
    certificate_rules: list[str] = Field(default_factory=lambda: [r"CN=([^,]+).* -> \1"],
                                         alias="certificate-rules")

    @field_validator("principals", "grants", mode="before")
    @classmethod
    def _none_lists(cls, value: object) -> object:
        return [] if value is None else value

    @field_validator("certificate_rules")
    @classmethod
    def _check_certificate_rules(cls, value: list[str]) -> list[str]:
        return _check_rules(value)

    @field_validator("audit", "throttle", mode="before")
    @classmethod
    def _empty_audit(cls, value: object) -> object:
        return none_as_empty(value)

    @model_validator(mode="after")
    def _check_principals(self) -> AuthConfig:
        problems: list[tuple[Loc, str]] = []
        seen: dict[str, int] = {}
        for index, principal in enumerate(self.principals):
            if principal.name in seen:
                problems.append(((("principals", index, "name")),
                                 f"two principals named {principal.name!r} (principals[{seen[principal.name]}] "
                                 f"and principals[{index}])"))
            seen.setdefault(principal.name, index)
        for index, grant in enumerate(self.grants):
            if grant.principal not in seen:
                problems.append(((("grants", index, "principal")),
                                 f"unknown principal {grant.principal!r}: declare it under auth.principals"
                                 + suggest(grant.principal, list(seen))))
        if self.enabled and not self.principals:
            problems.append(((("principals",)), "auth is enabled but no principals are declared: nobody could "
                                                "do anything; add principals or set enabled: false"))
        if problems:
            raise problems_error(problems)
        return self

    def principal(self, name: str) -> PrincipalConfig | None:
        """The principal called ``name`` (exactly), or None."""
        return next((p for p in self.principals if p.name == name), None)


class Config(_Model):
    """The whole configuration file."""

    server: ServerConfig = Field(default_factory=ServerConfig)
    catalogs: list[CatalogConfig]
    dynamic_tables: DynamicTablesConfig = Field(default_factory=DynamicTablesConfig, alias="dynamic-tables")
    spark: SparkConfig = Field(default_factory=SparkConfig)
    staging: StagingConfig = Field(default_factory=StagingConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    auth: AuthConfig = Field(default_factory=AuthConfig)
    #: The daemons of this deployment (none: a daemon on its own).
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    #: The file the configuration came from (set by the loader, never read from the YAML).
    source: str = Field(default="<string>", exclude=True)

    @field_validator("server", "dynamic_tables", "spark", "staging", "cache", "auth", "cluster", mode="before")
    @classmethod
    def _empty_sections(cls, value: object) -> object:
        return none_as_empty(value)

    @field_validator("catalogs", mode="before")
    @classmethod
    def _catalogs_none(cls, value: object) -> object:
        return [] if value is None else value

    @field_validator("catalogs")
    @classmethod
    def _check_catalogs(cls, value: list[CatalogConfig]) -> list[CatalogConfig]:
        if not value:
            raise ValueError("at least one catalog is required")
        problems = _catalog_set_problems([c.name for c in value], [c.default for c in value])
        if problems:
            raise problems_error([((), problem) for problem in problems])
        if len(value) == 1 and not value[0].default:
            value = [value[0].model_copy(update={"default": True})]
        problems = _prefix_problems(value)
        if problems:
            raise problems_error([((), problem) for problem in problems])
        return value

    @model_validator(mode="after")
    def _grants_name_catalogs(self) -> Config:
        names = [c.name for c in self.catalogs]
        problems: list[tuple[Loc, str]] = [
            (("auth", "grants", index, "catalog"),
             f"unknown catalog {grant.catalog!r}: name a configured catalog or '*'" + suggest(grant.catalog, names))
            for index, grant in enumerate(self.auth.grants) if grant.catalog != "*" and grant.catalog not in names]
        if problems:
            raise problems_error(problems)
        return self

    @model_validator(mode="after")
    def _kerberized_metastores_have_a_login(self) -> Config:
        # catalogd reaches a kerberized metastore as its own principal: the one auth.kerberos names.
        problems: list[tuple[Loc, str]] = [
            (("catalogs", index, "connection", _SASL_KEY),
             f"catalog {catalog.name!r}: catalogd logs in to a kerberized metastore with its own principal "
             "and keytab: set auth.kerberos (principal, keytab)")
            for index, catalog in enumerate(self.catalogs) if catalog.sasl_enabled and self.auth.kerberos is None]
        if problems:
            raise problems_error(problems)
        return self

    @model_validator(mode="after")
    def _this_daemon_is_a_member(self) -> Config:
        members = self.cluster.members
        server = self.server
        if not members:
            return self
        ports = {"port": server.port, "hms-port": server.hms_port, "http-port": server.http_port}
        if 0 in ports.values():
            zero = ", ".join(f"server.{name}" for name, value in ports.items() if value == 0)
            raise problems_error([(("cluster", "members"),
                                   f"{zero} is 0 (any free port): members of a cluster need fixed ports")])
        if not any((m.port, m.hms_port, m.http_port) == (server.port, server.hms_port, server.http_port)
                   for m in members):
            raise problems_error([(("cluster", "members"),
                                   f"no member has this daemon's ports (port {server.port}, hms-port "
                                   f"{server.hms_port}, http-port {server.http_port}): list this daemon too")])
        return self

    @model_validator(mode="after")
    def _one_catalog_per_metastore_db(self) -> Config:
        # Two catalogs of one daemon on one database would be one metastore under two names, which
        # catalogd does not know they share (it tells shared metastores by their addresses).
        problems: list[tuple[Loc, str]] = []
        seen: dict[tuple[str, int, str], str] = {}
        for index, catalog in enumerate(self.catalogs):
            database = catalog.metastore_database
            if database is None:
                continue
            key = (database.host.lower(), database.port, database.name)
            if key in seen:
                problems.append((("catalogs", index, "metastore-db"),
                                 f"catalog {seen[key]!r} uses the same database: give each embedded catalog its own "
                                 f"database, or make this one remote on the other's metastore-port"))
            seen.setdefault(key, catalog.name)
        if problems:
            raise problems_error(problems)
        return self

    @property
    def default_catalog(self) -> CatalogConfig:
        """The catalog used when a name leaves its catalog out."""
        return next((c for c in self.catalogs if c.default), self.catalogs[0])

    def catalog(self, name: str) -> CatalogConfig | None:
        """The catalog called ``name`` (case-insensitive), or None."""
        wanted = name.strip().lower()
        return next((c for c in self.catalogs if c.name == wanted), None)


def raw_catalog_problems(catalogs: object) -> list[str]:
    """The catalog-set rules applied to raw YAML, for when validation stopped before they ran."""
    if not isinstance(catalogs, list) or not catalogs:
        return []
    names: list[str | None] = []
    defaults: list[bool | None] = []
    for item in catalogs:
        item = item if isinstance(item, dict) else {}
        name = item.get("name")
        try:
            names.append(identifier(name, "catalog name") if isinstance(name, str) else None)
        except ValueError:
            names.append(None)
        flag = item.get("default", False)
        defaults.append(flag if isinstance(flag, bool) else None)
    return _catalog_set_problems(names, defaults)
