"""The locations a write through the HMS endpoint claims, checked as the Thrift API checks its own.

A create, an alter, or an added partition names a directory the metastore will write to (and
later delete on a drop, or Spark will clear on an ``INSERT OVERWRITE``). Relayed unchecked, a
client could place an object on a directory catalogd does not own, or inside another object's,
and have it deleted. Each such location goes through the catalog's ``claim`` (strictly inside
``allowed-locations``, clear of every other object's directory), with the files lock held
until the metastore has answered, so no other write takes the directory in between.

Only a location that *changes* is claimed: an alter that keeps a table's (or partition's,
or database's) location as it is (statistics, properties) is not refused because an older
object lies outside today's rules.

catalogd's own stages are the one exception to "clear of every other object's directory": an
APPEND or OVERWRITE_PARTITIONS stage lives in ``<target>/.catalogd-stage-<key>`` (hidden from
readers, so its partitions stay under the target's location), and Spark adds the stage's
partitions through the endpoint. A partition of a staging table may lie inside the stage's
target's directory only when catalogd's signature covers the staging table (its name, target
and location: ``Catalog.stage_owner``), the staging table's directory is strictly inside its
target's, and the partition's is strictly inside the staging table's. A name alone (a table
called ``__catalogd_stage_x``, a directory called ``.catalogd-stage-x``) earns nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from catalogd.catalog.base import is_stage_table
from catalogd.catalog.hive_codec import STAGE_PREFIX, has_no_directory, spark_path
from catalogd.catalog.locations import parse
from catalogd.catalog.relay_target import RelayTarget
from catalogd.errors import CatalogError, PermissionDeniedError
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.downgrade import judged_as
from catalogd.hms.refused import Refused, meta_error
from catalogd.hms.rules import Rule, rule_of

__all__ = ["Claim", "check_claims", "check_move", "claims_of"]

#: One decoded call on the catalog's metastore (method, args) -> its result struct.
Upstream = Callable[[str, Any], Any]
#: Who began the stage of a staging table when catalogd signed it, else None (``Catalog.stage_owner``).
StageOwner = Callable[[Any], str | None]
#: The parameter of a staging table naming the table its stage writes (in its database).
_STAGE_TARGET = STAGE_PREFIX + "target"

_CREATE_TABLE = frozenset({"create_table", "create_table_with_environment_context", "create_table_with_constraints"})
_ALTER_TABLE = frozenset({"alter_table", "alter_table_with_environment_context", "alter_table_with_cascade"})
_ADD_PARTITION = frozenset({"add_partition", "add_partition_with_environment_context", "add_partitions",
                            "add_partitions_pspec", "add_partitions_req"})
_ALTER_PARTITION = frozenset({"alter_partition", "alter_partition_with_environment_context", "alter_partitions",
                              "alter_partitions_with_environment_context"})


@dataclass(frozen=True)
class Claim:
    """A directory a write would give an object: ``uri`` for ``what``, apart from ``own_table``'s."""

    uri: str
    what: str
    own_table: tuple[str, str] | None = None
    #: False: only confined to the allowed locations (a directory the metastore would move, not a new one).
    check_others: bool = True
    #: A table whose directory it may lie inside: the target of the signed stage whose partition it is.
    within: tuple[str, str] | None = None


def _success(result: Any) -> Any:
    """The result's value; an HMS exception in it is raised as the answer (the client sees it as it is)."""
    failure = next((v for k, v in vars(result).items() if k != "success" and v is not None), None)
    if failure is not None:
        raise Refused(failure)
    return getattr(result, "success", None)  # a void method's result has none


def _location(sd: Any) -> str:
    return str(getattr(sd, "location", None) or "") if sd is not None else ""


def _get(upstream: Upstream, method: str, *args: Any) -> Any:
    try:
        return _success(upstream(method, getattr(ThriftHiveMetastore, f"{method}_args")(*args)))
    except Refused as refused:
        if isinstance(refused.exc, hms.NoSuchObjectException):
            return None  # not there (yet): the write itself answers for that
        raise


def _partitions(method: str, args: Any) -> Iterator[tuple[str, str, Any]]:
    """(database, table, partition) for every partition an add or alter names; a shared
    storage spec's partitions get its root joined with their relative path."""
    if method in ("add_partition", "add_partition_with_environment_context"):
        part = args.new_part
        yield part.dbName, part.tableName, part
    elif method == "add_partitions":
        for part in args.new_parts or []:
            yield part.dbName, part.tableName, part
    elif method == "add_partitions_req":
        request = args.request
        for part in request.parts or []:
            yield part.dbName or request.dbName, part.tableName or request.tblName, part
    elif method == "add_partitions_pspec":
        for spec in args.new_parts or []:
            if spec.partitionList is not None:
                for part in spec.partitionList.partitions or []:
                    yield spec.dbName, spec.tableName, part
            shared = spec.sharedSDPartitionSpec
            if shared is not None:
                for pwsd in shared.partitions or []:
                    relative = pwsd.relativePath or ""
                    root = (spec.rootPath or _location(shared.sd)).rstrip("/")
                    uri = f"{root}/{relative.lstrip('/')}" if relative else ""
                    yield spec.dbName, spec.tableName, hms.Partition(values=pwsd.values,
                                                                     sd=hms.StorageDescriptor(location=uri))
    elif method in ("alter_partition", "alter_partition_with_environment_context"):
        yield args.db_name, args.tbl_name, args.new_part
    elif method in ("alter_partitions", "alter_partitions_with_environment_context"):
        for part in args.new_parts or []:
            yield args.db_name, args.tbl_name, part


def claims_of(method: str, args: Any, place: Callable[[str], str], upstream: Upstream,
              stage_owner: StageOwner | None = None) -> list[Claim]:
    """The directories a ``Rule.CLAIM`` write would give its objects (databases as the catalog knows them).

    Reads what it needs of the objects as they are now (a table's current location, a
    database's) from the metastore through ``upstream``. ``stage_owner`` tells catalogd's
    signed staging tables (see the module docstring); None: no partition gets a stage's leeway.
    """
    if rule_of(method) is not Rule.CLAIM:
        return []
    # A Hive 3/4 call (create_table_req, alter_table_req, ...) claims what its Hive 2.3 equivalent does.
    method, args = judged_as(method, args)
    out: list[Claim] = []
    if method == "create_database":
        db = args.database
        for uri in (db.locationUri, getattr(db, "managedLocationUri", None)):
            if uri:
                out.append(Claim(uri, f"database {place(db.name)}"))
    elif method == "alter_database":
        name = place(args.dbname)
        old = _get(upstream, "get_database", name)
        # Hive 4's databases have a second directory for their managed tables.
        for field in ("locationUri", "managedLocationUri"):
            new = str(getattr(args.db, field, None) or "") if args.db is not None else ""
            if new and (old is None or str(getattr(old, field, None) or "").rstrip("/") != new.rstrip("/")):
                out.append(Claim(new, f"database {name}"))
    elif method in _CREATE_TABLE:
        tbl = args.tbl
        database = place(tbl.dbName)
        what = f"table {database}.{tbl.tableName.lower()}"
        if has_no_directory(tbl):
            return []  # a view has no directory (but an Iceberg view's metadata lies in its location)
        uri = _location(tbl.sd)
        if not uri:
            # The metastore's default place, under its database: checked as the Thrift API checks it.
            db = _get(upstream, "get_database", database)
            if db is None or not db.locationUri:
                return []
            uri = f"{db.locationUri.rstrip('/')}/{tbl.tableName.lower()}"
        out.append(Claim(uri, what))
        path = spark_path(tbl) if tbl.sd is not None else None
        if path and path.rstrip("/") != uri.rstrip("/"):
            # Spark reads (and overwrites) a data source table at its serde `path`, whatever its
            # location says: refused there, Spark retries with a placeholder location and the real one here.
            out.append(Claim(path, f"{what} (its Spark path)"))
    elif method in _ALTER_TABLE:
        database, name = place(args.dbname), args.tbl_name.lower()
        new = args.new_tbl
        old = _get(upstream, "get_table", database, name)
        if old is None or new is None or has_no_directory(new):
            return []
        new_db, new_name = place(new.dbName or database), (new.tableName or name).lower()
        uri = _location(new.sd)
        what = f"table {new_db}.{new_name}"
        if uri and uri.rstrip("/") != _location(old.sd).rstrip("/"):
            out.append(Claim(uri, what, (database, name)))
        path = spark_path(new) if new.sd is not None else None
        old_path = spark_path(old) if old.sd is not None else None
        if path and path.rstrip("/") not in ((old_path or "").rstrip("/"), uri.rstrip("/")):
            out.append(Claim(path, f"{what} (its Spark path)", (database, name)))
        elif (new_db, new_name) != (database, name) and _managed(old):
            # A managed table renamed: the metastore moves its directory to the new default place.
            # What it moves must be catalogd's (a table made behind its back on a foreign
            # directory would carry that directory into the warehouse, where a drop deletes it).
            if _location(old.sd):
                out.append(Claim(_location(old.sd), f"table {database}.{name} (moved by the rename)",
                                 check_others=False))
            db = _get(upstream, "get_database", new_db)
            if db is not None and db.locationUri:
                out.append(Claim(f"{db.locationUri.rstrip('/')}/{new_name}", what, (database, name)))
    elif method in _ADD_PARTITION or method in _ALTER_PARTITION:
        stages: dict[tuple[str, str], _Stage] = {}
        for db_name, tbl_name, part in _partitions(method, args):
            uri = _location(part.sd)
            if not uri:
                continue  # its default place, inside its table's directory
            database, table = place(db_name), str(tbl_name).lower()
            what = f"partition {list(part.values or [])} of table {database}.{table}"
            if method in _ALTER_PARTITION:
                old = _get(upstream, "get_partition", database, table, list(part.values or []))
                if old is not None and _location(old.sd).rstrip("/") == uri.rstrip("/"):
                    continue  # unchanged
            stage = stages.get((database, table))
            if stage is None:
                stage = stages[(database, table)] = _signed_stage(upstream, database, table, stage_owner)
            within = stage.target if stage.target is not None and _inside(stage.directory, uri) else None
            out.append(Claim(uri, what, (database, table), within=within))
    return out


@dataclass(frozen=True)
class _Stage:
    """A staging table catalogd signed, lying strictly inside its target's directory (else ``target`` None)."""

    target: tuple[str, str] | None = None
    directory: str = ""


def _signed_stage(upstream: Upstream, database: str, table: str, stage_owner: StageOwner | None) -> _Stage:
    """The stage whose partitions may lie inside its target's directory (see the module docstring)."""
    if stage_owner is None or not is_stage_table(table):
        return _Stage()
    stage = _get(upstream, "get_table", database, table)
    if stage is None or stage_owner(stage) is None:
        return _Stage()  # unsigned: whoever made it, its name and parameters vouch for nothing
    target = str((stage.parameters or {}).get(_STAGE_TARGET, "")).lower()
    found = _get(upstream, "get_table", database, target) if target else None
    directory = _location(stage.sd).rstrip("/")
    if found is None or not _inside(_location(found.sd), directory):
        return _Stage()
    return _Stage((database, target), directory)


def _managed(tbl: Any) -> bool:
    """Whether the metastore treats the table's directory as its own (moves it, deletes it): a
    managed table, or an external one with ``external.table.purge`` (HMS 4 makes a Hive 2.3
    client's managed tables so), as ``HiveSession._managed`` judges drops."""
    params = tbl.parameters or {}
    if tbl.tableType == "VIRTUAL_VIEW":
        return False
    return str(params.get("EXTERNAL", "")).upper() != "TRUE" or \
        str(params.get("external.table.purge", "")).upper() == "TRUE"


def check_claims(claims: list[Claim], target: RelayTarget, method: str) -> None:
    """Refuse the write unless every claimed directory is catalogd's to give (call with the files lock held).

    Raises:
        Refused: a MetaException naming the directory and why, as the Thrift API's error says it.
    """
    # Two objects of one call may not share a directory either (by directory: one look-up per claim).
    taken: dict[str, Claim] = {}
    for claim in claims:
        try:
            location = target.claim(claim.uri, claim.what, claim.own_table, claim.check_others, claim.within)
        except CatalogError as e:
            raise meta_error(f"catalogd: {method} refused: {e}", PermissionDeniedError) from None
        other = taken.get(location.uri.rstrip("/"))
        if other is not None:
            raise meta_error(f"catalogd: {method} refused: {claim.what} and {other.what} name one "
                             f"directory {location.uri}", PermissionDeniedError)
        if claim.check_others:
            taken[location.uri.rstrip("/")] = Claim(location.uri, claim.what, claim.own_table)


def check_move(method: str, args: Any, place: Callable[[str], str], upstream: Upstream) -> None:
    """Refuse a partition rename that would make the metastore move a directory that is not its table's.

    The metastore moves a managed table's renamed partition from wherever it lies into the
    table's directory (and a later drop deletes it there): a partition on a directory outside
    its table's could carry another object's or a foreign directory into the warehouse.

    Raises:
        Refused: a MetaException saying which directory would move.
    """
    if rule_of(method) is not Rule.MOVE:
        return
    judged, args = judged_as(method, args)
    if judged != "rename_partition":
        return
    database, table = place(args.db_name), args.tbl_name.lower()
    tbl = _get(upstream, "get_table", database, table)
    if tbl is None or not _managed(tbl):
        return  # an external table's partitions are renamed in the metastore only
    part = _get(upstream, "get_partition", database, table, list(args.part_vals or []))
    if part is None:
        return  # the metastore answers for a missing partition
    table_dir, part_dir = _location(tbl.sd).rstrip("/"), _location(part.sd).rstrip("/")
    if part_dir and not _inside(table_dir, part_dir):
        raise meta_error(f"catalogd: {method} refused: partition {list(args.part_vals or [])} of table "
                         f"{database}.{table} lies at {part_dir}, outside its table's directory {table_dir}; the "
                         "metastore would move that directory into the table's (catalogd deletes and moves only "
                         "what it owns)", PermissionDeniedError)


def _inside(outer: str, inner: str) -> bool:
    """Whether ``inner`` lies strictly inside ``outer`` (as locations; unreadable ones: never)."""
    if not outer:
        return False
    try:
        return parse(outer).strictly_contains(parse(inner))
    except CatalogError:
        return False
