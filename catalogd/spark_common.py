"""The Spark code both sides run: session settings, Hive columns, writing through a stage.

Users' PySpark jobs reach it through ``catalogd.spark`` (``staged_table``,
``spark_conf_for``, the atomic writes built on them); the daemon's side uses it too: the
refresh job it submits (``catalogd.dynamic.job``) writes through ``staged_table`` and
``write_staged``, the query analyzer (``catalogd.dynamic.analyzer``) converts schemas with
``hive_columns``, and job settings come from ``spark_conf_for``. Keeping it here, outside
both packages, lets ``catalogd.spark`` and ``catalogd.dynamic`` depend on it and not on each
other; it imports only the client side (``catalogd.client``, ``model``, ``errors``, ``hive_types``).

A stage, in short: the job writes into a hidden staging table, and the daemon publishes it
in one metastore call on success and drops it on failure (docs/atomic-writes.md).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from catalogd.errors import (
    CatalogError,
    ConflictError,
    InternalError,
    InvalidArgumentError,
    StageNotFoundError,
    UnsupportedError,
)
from catalogd.model import CatalogInfo, Column, Stage, StagePurpose, StageState, TableFormat

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from catalogd.client import CatalogClient

logger = logging.getLogger(__name__)

#: ``mode`` words of the writers -> stage purposes.
MODES = {
    "create": StagePurpose.CREATE,
    "create_if_not_exists": StagePurpose.CREATE_IF_NOT_EXISTS,
    "replace": StagePurpose.REPLACE,
}
_URIS_KEY = "spark.hadoop.hive.metastore.uris"


# ---------------------------------------------------------------- session settings

_FILTER_HOOK = "org.apache.hadoop.hive.ql.security.authorization.plugin.AuthorizationMetaStoreFilterHook"

#: How Spark's metastore client (Hive 2.3's ``HiveMetaStoreClient`` in Spark's own jars, behind
#: ``RetryingMetaStoreClient``) rides out a restart of catalogd. A call on a connection that
#: broke is made again after a reconnect, up to ``failure.retries`` times; each (re)connect tries
#: ``connect.retries`` times, ``connect.retry.delay`` apart, while the port refuses. Hive's
#: defaults (3 tries, 1 s apart, 1 reconnect) gave up 3 s into a restart that takes 7 s or more.
#: With these, the port may refuse for about 30 s per reconnect (a restart refuses only from
#: the old daemon's stop until the new one has loaded its config: the new one binds the port
#: first and holds calls until it is ready); two reconnects cover a connection that the old
#: daemon closed again as it stopped. The cost: a session whose daemon is down waits about
#: 30 s (a new session) or a minute (a call) before its error.
HMS_CLIENT_RETRIES = {
    "spark.hadoop.hive.metastore.connect.retries": "30",
    "spark.hadoop.hive.metastore.client.connect.retry.delay": "1s",
    "spark.hadoop.hive.metastore.failure.retries": "2",
}


def spark_conf_for(info: CatalogInfo) -> dict[str, str]:
    """The ``spark.*`` settings for a session on ``info``'s catalog.

    With catalogd's HMS endpoint known (``info.hms_endpoint``), Spark talks to catalogd, which
    serves every catalog (the catalog's databases under its ``hms_prefix``); otherwise (a
    catalog object read inside the daemon, e.g. for refresh jobs) to the catalog's own
    metastore.

    Raises:
        UnsupportedError: a memory catalog and no HMS endpoint (Spark cannot reach it).
    """
    metastore = info.hms_endpoint or (info.metastore if info.type == "hive" else None)
    if not metastore:
        raise UnsupportedError(f"catalog {info.name!r} is a {info.type} catalog: Spark reaches it only through "
                               "catalogd's HMS endpoint (server.hms-port)")
    settings = {
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.hive.metastore.uris": metastore,
        # Hive 2.3's SessionState switches the filter hook to this value on the first call
        # that asks for the user name; the client sees a changed metastore setting and closes
        # the connection a call in progress still holds (HIVE-24404), which logs a "lost
        # connection" stack trace on every session's first partition listing. Starting with
        # the value it would switch to leaves nothing to change.
        "spark.hadoop.hive.metastore.filter.hook": _FILTER_HOOK,
    }
    if info.hms_endpoint:
        # catalogd's endpoint: a session outlives the daemon's restarts (the daemon's own jobs,
        # on a catalog's metastore, keep Hive's defaults and fail within seconds).
        settings.update(HMS_CLIENT_RETRIES)
    if info.hms_endpoint and info.hms_tls:
        # Hive's metastore client over TLS: it verifies the endpoint with a JKS truststore.
        settings["spark.hadoop.hive.metastore.use.SSL"] = "true"
        if info.hms_truststore:
            settings["spark.hadoop.hive.metastore.truststore.path"] = info.hms_truststore
        if info.hms_truststore_password_env:
            # A reference, not the password: Hive's client reads it with Configuration.getPassword
            # (a credential provider first, then the value), and Hadoop's Configuration (3.0+)
            # expands ${env.NAME} from the client process's environment.
            settings["spark.hadoop.hive.metastore.truststore.password"] = truststore_password_ref(
                info.hms_truststore_password_env)
    if info.hms_endpoint and info.hms_kerberos_principal:
        # Hive's metastore client speaks SASL GSSAPI with a Kerberos ticket (Spark logs in with
        # spark.kerberos.principal and spark.kerberos.keytab, or a kinit'ed ticket cache).
        settings["spark.hadoop.hive.metastore.sasl.enabled"] = "true"
        settings["spark.hadoop.hive.metastore.kerberos.principal"] = info.hms_kerberos_principal
        settings["spark.hadoop.hadoop.security.authentication"] = "kerberos"
    if info.warehouse:
        settings["spark.sql.warehouse.dir"] = info.warehouse
    if info.type == "jdbc" and info.jdbc_driver_jar:
        # Spark writes and reads a jdbc catalog's tables with this driver (classpath fixed at start).
        settings["spark.jars"] = info.jdbc_driver_jar
    return settings


def truststore_password_ref(env_name: str) -> str:
    """The ``hive.metastore.truststore.password`` value that names the variable holding it."""
    return "${env." + env_name + "}"


# ---------------------------------------------------------------- plumbing

@contextlib.contextmanager


def client_or_own(client: CatalogClient | None) -> Iterator[CatalogClient]:
    """``client``, or a ``CatalogClient()`` of our own (from the environment) that is closed after."""
    from catalogd.client import CatalogClient

    if client is not None:
        yield client
        return
    own = CatalogClient()
    try:
        yield own
    finally:
        own.close()


def metastore_uris(text: str | None) -> set[str]:
    """A ``hive.metastore.uris`` value as a set, spelled alike for comparing."""
    return {u.strip().rstrip("/").lower() for u in (text or "").split(",") if u.strip()}


def session_uris(spark: SparkSession) -> set[str]:
    """The metastores ``spark``'s session uses.

    Raises:
        InvalidArgumentError: it uses none (not a session on a Hive metastore).
    """
    session = metastore_uris(spark.conf.get(_URIS_KEY, None) or spark.sparkContext.getConf().get(_URIS_KEY))
    if not session:
        raise InvalidArgumentError(
            "the SparkSession has no hive.metastore.uris: build it with catalogd.spark.session_builder(catalog)"
        )
    return session


def spark_prefix(info: CatalogInfo, spark: SparkSession | None) -> str:
    """What the session calls ``info``'s databases start with: its HMS-endpoint prefix when
    the session is on the endpoint (sessions from ``session_builder`` are), else nothing."""
    if info.type == "jdbc":  # Spark reaches a jdbc catalog through JDBC, not the endpoint
        return ""
    if spark is not None and not (metastore_uris(info.hms_endpoint) & session_uris(spark)):
        return ""
    return session_catalog_qualifier(spark) + (info.hms_prefix or "")


SESSION_CATALOG_QUALIFIER = "spark_catalog."


def session_catalog_qualifier(spark: SparkSession | None) -> str:
    """``spark_catalog.`` when the session's default catalog is another one (the catalog plugin's,
    ``spark.sql.defaultCatalog``), so that a name meant for the HMS endpoint still reaches it."""
    if spark is None:
        return ""
    default = spark.conf.get("spark.sql.defaultCatalog", "spark_catalog") or "spark_catalog"
    return "" if default == "spark_catalog" else SESSION_CATALOG_QUALIFIER


# ---------------------------------------------------------------- columns

def hive_columns(schema: Any) -> list[Column]:
    """Hive columns for a Spark ``StructType``.

    Raises:
        InvalidArgumentError: a column whose Spark type Hive cannot store.
    """
    from pyspark.sql.types import NullType

    from catalogd.hive_types import parse_type

    columns = []
    for field in schema.fields:
        if isinstance(field.dataType, NullType):
            raise InvalidArgumentError(f"column {field.name!r} has no type (a bare NULL?): cast it")
        try:
            hive_type = parse_type(field.dataType.simpleString())
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"column {field.name!r}: Hive cannot store Spark type "
                                       f"{field.dataType.simpleString()} ({e.message})") from e
        comment = (field.metadata or {}).get("comment")
        columns.append(Column(field.name.lower(), hive_type, comment))
    return columns


# ---------------------------------------------------------------- writing through a stage

class _Heartbeat:
    """Keeps a stage's lease alive from a background thread until stopped."""

    def __init__(self, client: CatalogClient, stage: Stage, on_lost: Any = None) -> None:
        self.client = client
        self.stage = stage
        self.on_lost = on_lost
        lease = ((stage.lease_deadline or 0) - (stage.created or 0)) / 1000 or 60.0
        self.lease = lease
        self.interval = max(0.5, lease / 3)
        self.error: CatalogError | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"catalogd-heartbeat-{stage.id}", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.client.heartbeat_stage(self.stage.id, self.lease)
            except (StageNotFoundError, ConflictError) as e:
                self.error = e
                logger.error("stage %s was lost: %s", self.stage.id, e)
                if self.on_lost is not None:
                    self.on_lost()
                return
            except CatalogError as e:
                # A daemon restart or a network blip: the lease has room for a few misses.
                logger.warning("heartbeat of stage %s failed: %s", self.stage.id, e)


class StagedTable:
    """What ``staged_table`` yields: the stage and the Spark table to write into."""

    def __init__(self, stage: Stage, spark_prefix: str = "", info: CatalogInfo | None = None) -> None:
        self.stage = stage
        #: What the writing session calls the stage's database starts with (HMS endpoint prefix).
        self.spark_prefix = spark_prefix
        #: The stage's catalog (None: it could not be read); a jdbc catalog's stage is written through JDBC.
        self.info = info
        #: The final stage after the block: COMMITTED, or ABORTED.
        self.result: Stage | None = None

    @property
    def active(self) -> bool:
        """False when there is nothing to write (CREATE_IF_NOT_EXISTS and the target exists)."""
        return self.stage.state is StageState.OPEN

    @property
    def name(self) -> str | None:
        """``database.__catalogd_stage_...``: write here (``df.write.insertInto(staged.name)``)."""
        return self.spark_prefix + self.stage.spark_table if self.active else None

    @property
    def stage_id(self) -> str:
        return self.stage.id


@contextlib.contextmanager


def staged_table(
    target: str,
    schema: str | list[Column] | Any | None = None,
    *,
    partition_by: list[str] | str | None = None,
    format: str | TableFormat | None = None,
    mode: str | StagePurpose = "create",
    properties: dict[str, str] | None = None,
    comment: str | None = None,
    lease: float | None = None,
    client: CatalogClient | None = None,
    spark: SparkSession | None = None,
) -> Iterator[StagedTable]:
    """Begin a stage, yield it, commit on normal exit, abort on an exception (re-raised).

    Args:
        target: ``catalog.database.table`` (shorter forms use the daemon's defaults).
        schema: ``"id bigint, ds string"``, Columns or a Spark ``StructType``; partition
            columns included (they are taken out by ``partition_by``).
        partition_by: partition column names.
        mode: create, create_if_not_exists, replace, overwrite_partitions or append (the last two
            write into an existing table: schema None means its columns).
        lease: seconds without a heartbeat before the daemon aborts the stage.
        spark: when given, the block's Spark jobs run in a job group that is cancelled
            if the stage is lost (its lease lapsed), so they stop writing.

    Yields:
        A StagedTable: write into ``.name`` while the block runs; ``.active`` is False
        (and ``.name`` None) when there is nothing to do. ``.result`` holds the final stage.
    """
    from catalogd.hive_types import parse_schema

    if schema is None:
        columns: list[Column] = []
    elif isinstance(schema, str):
        columns = parse_schema(schema)
    elif isinstance(schema, list):
        columns = list(schema)
    else:
        columns = hive_columns(schema)
    keys = [partition_by] if isinstance(partition_by, str) else list(partition_by or [])
    keys = [k.lower() for k in keys]
    by_name = {c.name.lower(): c for c in columns}
    missing = [k for k in keys if k not in by_name]
    if missing and columns:
        raise InvalidArgumentError(f"partition columns {missing} are not in the schema {list(by_name)}")
    data = [c for c in columns if c.name.lower() not in keys]
    partition_keys = [by_name[k] for k in keys if k in by_name]
    purpose = mode if isinstance(mode, StagePurpose) else MODES.get(mode.lower()) or StagePurpose.parse(mode)
    with client_or_own(client) as c:
        stage = c.begin_stage(target, data, partition_keys, format=format, purpose=purpose,
                              properties=properties, comment=comment, lease=lease)
        try:
            # Asks the session (a Spark Connect server may die here): the stage is open already.
            info = _catalog_info(c, stage)
            staged = StagedTable(stage, spark_prefix(info, spark) if info is not None else "", info)
        except BaseException:
            if stage.state is StageState.OPEN:
                _abort_quietly(c, stage)
            raise
        if not staged.active:
            yield staged
            staged.result = stage
            return
        group = f"catalogd-stage-{stage.id}"
        heartbeat = _Heartbeat(c, stage, on_lost=(lambda: _cancel_group(spark, group)) if spark else None)
        try:
            with heartbeat, _job_group(spark, group, f"writing stage {stage.id} for {stage.target_name}"):
                yield staged
        except BaseException:
            staged.result = _abort_quietly(c, stage) or staged.result
            raise
        if heartbeat.error is not None:
            raise heartbeat.error
        staged.result = c.commit_stage(stage.id)


def _abort_quietly(client: CatalogClient, stage: Stage) -> Stage | None:
    """Abort ``stage`` for a write that failed; the aborted stage, or None when the abort failed
    too (logged: the janitor aborts it once its lease lapses)."""
    try:
        return client.abort_stage(stage.id, writer_stopped=True)
    except CatalogError as e:
        logger.error("aborting stage %s failed (the janitor will, once its lease lapses): %s", stage.id, e)
        return None


def _catalog_info(client: CatalogClient, stage: Stage) -> CatalogInfo | None:
    try:
        return client.get_catalog(stage.catalog)
    except CatalogError:
        return None


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no SparkContext, no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _cancel_group(spark: SparkSession, group: str) -> None:
    if is_connect(spark):
        spark.interruptTag(group)
    else:
        spark.sparkContext.cancelJobGroup(group)


_JOB_GROUP_KEYS = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


@contextlib.contextmanager


def _job_group(spark: SparkSession | None, group: str, description: str) -> Iterator[None]:
    """Run this thread's Spark jobs in ``group`` (restoring the one before)."""
    if spark is None:
        yield
        return
    if is_connect(spark):
        # A Connect session has no SparkContext: its operations carry the tag instead.
        spark.addTag(group)
        try:
            yield
        finally:
            spark.removeTag(group)
        return
    sc = spark.sparkContext
    before = [sc.getLocalProperty(key) for key in _JOB_GROUP_KEYS]
    sc.setJobGroup(group, description, interruptOnCancel=True)
    try:
        yield
    finally:
        for key, value in zip(_JOB_GROUP_KEYS, before, strict=True):
            # None unsets a property that was not set before (documented, though the stub says str).
            sc.setLocalProperty(key, value)  # type: ignore[arg-type]


@contextlib.contextmanager
def writing_to_session_catalog(spark: SparkSession, current: str | None = None) -> Iterator[None]:
    """Make ``spark_catalog`` (catalogd's HMS endpoint) the current catalog while the block writes.

    ``DataFrameWriter.insertInto`` and ``saveAsTable`` take a session-catalog table
    (``spark_catalog.db.t``, as ``spark_prefix`` names it in a session whose default catalog is the
    catalog plugin's) only while the session catalog is the current one (Spark's
    ``AsTableIdentifier``); otherwise they fail with "Couldn't find a catalog to handle the
    identifier". The current catalog and database are restored after; meanwhile another thread's
    unqualified names in the same session meet the session catalog (a qualified name is safe).
    Nothing changes in a session already on the session catalog (every session before the plugin,
    every refresh job's).

    Args:
        current: the session's current catalog, when the caller asked it already (``SessionState``).
    """
    catalog = current if current is not None else spark.catalog.currentCatalog()
    if catalog == "spark_catalog":
        yield
        return
    database = spark.catalog.currentDatabase()
    spark.catalog.setCurrentCatalog("spark_catalog")
    try:
        yield
    finally:
        spark.catalog.setCurrentCatalog(catalog)
        spark.catalog.setCurrentDatabase(database)


#: Hive's setting that lets an insert write partitions from the data's values when "nonstrict".
DYNAMIC_PARTITION_MODE = "hive.exec.dynamic.partition.mode"
#: The observation a Connect write counts its rows in (``write_staged``).
ROWS_OBSERVATION = "catalogd_rows_written"


@dataclass(frozen=True)
class SessionState:
    """What ``write_staged`` asks a session before it writes: its current catalog and its
    dynamic-partition mode (``session_state``).

    On a Spark Connect server these are two round trips, and the current catalog is a query of
    its own (a plan executed and its answer fetched): a caller that knows that nothing changes
    them before its write (a refresh: its session runs only its query's analysis meanwhile)
    asks them ahead, beside the stage's begin, and hands them to ``write_staged``.
    """

    current_catalog: str
    partition_mode: str | None


def session_state(spark: SparkSession) -> SessionState:
    """``spark``'s current catalog and dynamic-partition mode, now."""
    return SessionState(spark.catalog.currentCatalog(), spark.conf.get(DYNAMIC_PARTITION_MODE, None))


@contextlib.contextmanager


def dynamic_partitions(spark: SparkSession, state: SessionState | None = None) -> Iterator[None]:
    """Let inserts in the block write partitions from the data's values (restoring the setting after).

    Args:
        state: the session's setting, when the caller asked it already.
    """
    key = DYNAMIC_PARTITION_MODE
    before = state.partition_mode if state is not None else spark.conf.get(key, None)
    if before == "nonstrict":  # nothing to change or restore (a run's Connect session starts so)
        yield
        return
    spark.conf.set(key, "nonstrict")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def insert_by_position(df: DataFrame, name: str, overwrite: bool) -> None:
    """``df.write.insertInto(name, overwrite=...)``, also for a ``spark_catalog.``-qualified name
    while another catalog (the catalog plugin's) is the session's current one.

    Spark's ``DataFrameWriter.insertInto`` takes a session-catalog table only while the session
    catalog is the current one ("Couldn't find a catalog to handle the identifier"); the same
    insert as SQL (``INSERT OVERWRITE|INTO TABLE t SELECT * FROM <view>``: by position, every
    partition column dynamic) resolves the qualified name whatever the current catalog is.
    """
    if not name.startswith(SESSION_CATALOG_QUALIFIER):
        df.write.insertInto(name, overwrite=overwrite)
        return
    import uuid

    spark = df.sparkSession
    view = f"__catalogd_insert_{uuid.uuid4().hex}"
    target = ".".join(f"`{part.strip('`')}`" for part in name.split("."))
    df.createOrReplaceTempView(view)
    try:
        spark.sql(f"INSERT {'OVERWRITE' if overwrite else 'INTO'} TABLE {target} SELECT * FROM `{view}`")
    finally:
        spark.catalog.dropTempView(view)


def write_staged(spark: SparkSession, df: DataFrame, staged: StagedTable, count: bool = False,
                 state: SessionState | None = None) -> int | None:
    """Write ``df`` into an active stage (``insertInto``: by position, so its columns in the table's order).

    Args:
        count: have the write count its rows where it can (a Spark Connect session: in the
            write's own tasks, no second job).
        state: the session's current catalog and dynamic-partition mode when the caller asked
            them already (``session_state``); None: asked here.

    Returns:
        The rows written when ``count`` and the write reported them, else None
        (``count_staged`` counts them).

    Raises:
        InternalError: the stage is not open (nothing to write into).
    """
    name = staged.name
    if name is None:  # callers write only into an active stage; this would be a bug of theirs
        raise InternalError(f"stage {staged.stage_id} is {staged.stage.state}: there is nothing to write into")
    if staged.info is not None and staged.info.type == "jdbc":
        # The stage's columns are lower case, as catalogd keeps names; Spark's JDBC insert names them.
        write_jdbc(spark, df.toDF(*[c.lower() for c in df.columns]), staged.info, staged.stage.spark_table, "append")
        return None
    with (dynamic_partitions(spark, state),
          writing_to_session_catalog(spark, state.current_catalog if state is not None else None)):
        if not (count and is_connect(spark)):
            insert_by_position(df, name, overwrite=True)
            return None
        from pyspark.sql.connect import functions as F

        # The rows pass through unchanged; the count comes back with the write's answer.
        observed = df.observe(ROWS_OBSERVATION, F.count(F.lit(1)).alias("rows"))
        insert_by_position(observed, name, overwrite=True)
        return observed_rows(observed)


def observed_rows(df: Any) -> int | None:
    """The rows ``write_staged``'s observation counted in a Connect write (None: not reported)."""
    info = getattr(df, "executionInfo", None)
    for name, pairs in (info.flows if info is not None else []):
        if name == ROWS_OBSERVATION and pairs.get("rows") is not None:
            return int(pairs["rows"])
    return None


def count_staged(spark: SparkSession, staged: StagedTable) -> int:
    """The rows written into an active stage so far (a jdbc catalog's: counted by PostgreSQL)."""
    name = staged.name
    if name is None:
        raise InternalError(f"stage {staged.stage_id} is {staged.stage.state}: there is nothing to count")
    if staged.info is not None and staged.info.type == "jdbc":
        database, table = staged.stage.database, staged.stage.staging_table
        query = f'(SELECT count(*) AS n FROM "{database}"."{table}") AS staged'
        return int(read_jdbc(spark, staged.info, query).collect()[0][0])
    return int(spark.table(name).count())


# ---------------------------------------------------------------- jdbc catalogs

#: Spark settings and environment variables a job gives a jdbc catalog's credentials in
#: (``<name>``: the catalog's name; upper case in the variables). Spark redacts settings whose
#: names contain "password" from its UI and logs; a Spark Connect server also hands them back
#: redacted (absent) to its clients, so a Connect session's job cannot read its password there.
#: The daemon's own Connect runs give none: the server's PostgreSQL password file has it
#: (``catalogd.dynamic.pgpass``).
JDBC_USER_CONF = "spark.catalogd.jdbc.{name}.user"
JDBC_PASSWORD_CONF = "spark.catalogd.jdbc.{name}.password"
JDBC_USER_ENV = "CATALOGD_JDBC_USER_{NAME}"
JDBC_PASSWORD_ENV = "CATALOGD_JDBC_PASSWORD_{NAME}"
_PG_DRIVER = "org.postgresql.Driver"


def jdbc_driver_jars(infos: list[CatalogInfo]) -> list[str]:
    """The JDBC driver jars of the jdbc catalogs among ``infos`` (for ``spark.jars``), once each."""
    return sorted({i.jdbc_driver_jar for i in infos if i.type == "jdbc" and i.jdbc_driver_jar})


def jdbc_properties(spark: SparkSession, info: CatalogInfo) -> dict[str, str]:
    """Connection properties for Spark's JDBC source on ``info``'s database: the driver, the user and
    the password the job was given (Spark setting, else environment variable; see ``JDBC_*``)."""
    import os

    def given(conf: str, env: str) -> str | None:
        value = spark.conf.get(conf.format(name=info.name), None)
        return value or os.environ.get(env.format(NAME=info.name.upper()))

    props = {"driver": _PG_DRIVER,
             # Batched INSERTs rewritten to multi-row ones: the one setting that matters for write speed.
             "reWriteBatchedInserts": "true"}
    user = given(JDBC_USER_CONF, JDBC_USER_ENV) or info.jdbc_user
    if user:
        props["user"] = user
    password = given(JDBC_PASSWORD_CONF, JDBC_PASSWORD_ENV)
    if password:
        props["password"] = password
    return props


def write_jdbc(spark: SparkSession, df: DataFrame, info: CatalogInfo, table: str, mode: str) -> None:
    """Write ``df`` into ``schema.table`` of a jdbc catalog with Spark's JDBC source."""
    if not info.metastore:
        raise InvalidArgumentError(f"catalog {info.name!r} names no JDBC URL")
    df.write.jdbc(info.metastore, table, mode=mode, properties=jdbc_properties(spark, info))


def read_jdbc(spark: SparkSession, info: CatalogInfo, table: str) -> DataFrame:
    """``schema.table`` of a jdbc catalog as a DataFrame (Spark's JDBC source)."""
    if not info.metastore:
        raise InvalidArgumentError(f"catalog {info.name!r} names no JDBC URL")
    return spark.read.jdbc(info.metastore, table, properties=jdbc_properties(spark, info))
