"""The Iceberg REST catalog's operations over catalogd's catalogs (the route table's handlers).

As Iceberg's ``CatalogHandlers``: each operation takes the request's parts and answers a
JSON-able result, or raises; ``routes`` is the thin HTTP layer over it and ``errors`` turns
what is raised into the spec's error model. One REST *warehouse* is one catalogd catalog
(``GET /v1/config?warehouse=<catalog>`` answers its prefix, the catalog's name); a namespace
is one of its databases (HMS databases do not nest: one level).

Every metastore call goes through the HMS endpoint's router in-process (``loopback``) as the
REST caller, so the REST door follows the HMS door's rules by construction.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import TypeAdapter
from pyiceberg.catalog import LOCATION
from pyiceberg.catalog.rest import CreateTableRequest, RegisterTableRequest
from pyiceberg.exceptions import (
    NoSuchIcebergTableError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.table.update import AssertCreate, TableRequirement, TableUpdate

from catalogd.auth.model import Principal, Role
from catalogd.catalog.hive_codec import is_iceberg_view
from catalogd.errors import CatalogNotFoundError, InvalidArgumentError, PermissionDeniedError
from catalogd.iceberg.errors import CONNECTION
from catalogd.iceberg.loopback import LoopbackClient, connection
from catalogd.iceberg.tables import MetadataFiles, NoSuchNamespace, WarehouseCatalog
from catalogd.iceberg.transactions import Change, CommitGate, Finisher, Intents, commit_tables

if TYPE_CHECKING:
    from catalogd.catalog.base import Catalog
    from catalogd.hms.router import Router
    from catalogd.manager import CatalogManager

logger = logging.getLogger(__name__)

__all__ = ["ENDPOINTS", "IcebergDoor", "Loaded", "Request"]

#: The endpoints ``GET /v1/config`` advertises (the spec's ``endpoints`` strings).
ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
    "POST /v1/{prefix}/namespaces/{namespace}/register-view",
]

_REQUIREMENTS: TypeAdapter[list[TableRequirement]] = TypeAdapter(list[TableRequirement])
_UPDATES: TypeAdapter[list[TableUpdate]] = TypeAdapter(list[TableUpdate])


class Access(Protocol):
    """What the door needs of the daemon's ``catalogd.server.access.Access``."""

    @property
    def enabled(self) -> bool: ...

    def require(self, principal: Principal, catalog: str | None, needed: Role, operation: str,
                job_write: bool = False) -> None: ...

    def record(self, *, principal: str | None, surface: str, client: str, operation: str, object: str | None,
               outcome: str, detail: str | None = None) -> None: ...


@dataclass(frozen=True)
class Request:
    """Who asks, from where, in which warehouse."""

    principal: Principal
    peer: str
    warehouse: str


@dataclass(frozen=True)
class Loaded:
    """A loaded table: its metadata location and the ``LoadTableResult`` JSON."""

    metadata_location: str
    body: bytes

    @property
    def etag(self) -> str:
        return etag_of(self.metadata_location)


def etag_of(metadata_location: str) -> str:
    """The ETag of a table's load: its metadata file names its state (one file per commit)."""
    return '"' + hashlib.sha256(metadata_location.encode()).hexdigest()[:32] + '"'


class _Target:
    """What ``HiveCatalog.commit_table`` needs of the table it commits to: its name."""

    def __init__(self, identifier: tuple[str, str]) -> None:
        self.identifier = identifier
        self.metadata = None

    def name(self) -> tuple[str, str]:
        return self.identifier


def namespace_of(text: str) -> tuple[str, ...]:
    """A namespace from a path segment (levels separated by the unit separator, 0x1F)."""
    return tuple(text.split("\x1f"))


def _identifier(value: Any, what: str) -> tuple[tuple[str, ...], str]:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) \
            or not isinstance(value.get("namespace"), list) \
            or not all(isinstance(level, str) for level in value["namespace"]):
        raise InvalidArgumentError(f"{what}: an identifier is {{\"namespace\": [...], \"name\": \"...\"}}")
    return tuple(value["namespace"]), value["name"]


def _body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except ValueError as e:
        raise InvalidArgumentError(f"the request body is not JSON: {e}") from None
    if not isinstance(body, dict):
        raise InvalidArgumentError("the request body must be a JSON object")
    return body


class IcebergDoor:
    """The Iceberg REST catalog of one daemon.

    Args:
        manager: the daemon's catalogs.
        router: the HMS endpoint's router (every metastore call goes through it).
        scratch: where memory catalogs keep their files (``<data dir>/<scratch warehouse>``).
        access: auth (None: everyone is anonymous and may do everything).
    """

    def __init__(self, manager: CatalogManager, router: Router, scratch: Path, access: Access | None = None) -> None:
        self.manager = manager
        self.router = router
        self.scratch = scratch
        self.access = access
        self.files = MetadataFiles()
        self.gate = CommitGate()
        self.intents = Intents(scratch.parent)
        self.finisher = Finisher(self._internal, self.intents, self.gate)
        # Readers through catalogd wait while a transaction moves a table's pointer: the HMS
        # endpoint's table reads and the catalogd API's get_table, beside the REST loads.
        router.commit_gate = self.gate
        manager.table_gate = self.gate.wait

    # ------------------------------------------------------------ warehouses

    def warehouse(self, name: str | None) -> str:
        """The catalog a warehouse name means (the default catalog when none is given)."""
        catalogs = self.manager.catalogs()
        if not name:
            return self.manager.default_catalog
        if name not in catalogs:
            raise CatalogNotFoundError(f"no catalog {name!r}: the warehouses are catalogd's catalogs "
                                       f"({', '.join(sorted(catalogs))})")
        return name

    def require(self, request: Request, write: bool) -> None:
        """The caller may read the warehouse's catalog (and write it, for a write); a refresh job's
        token writes only through its stages; a read-only catalog refuses every write.

        Checked before anything is written: a commit writes its metadata file before the metastore
        would refuse the pointer's move (a refused write would leave a file in the table's location).
        A denial goes to the audit log (surface ``iceberg``), as the HTTP routes' denials do.
        """
        operation = "iceberg " + ("write" if write else "read")
        access = self.access
        if access is not None and access.enabled:
            needed = Role.WRITER if write else Role.READER
            try:
                access.require(request.principal, request.warehouse, needed, operation)
            except PermissionDeniedError as e:
                access.record(principal=request.principal.name, surface="iceberg", client=request.peer,
                              operation=operation, object=request.warehouse, outcome="denied", detail=e.message)
                raise
        conf = self.manager.config.catalog(request.warehouse)
        if write and conf is not None and conf.read_only:
            raise PermissionDeniedError(f"catalog {request.warehouse!r} is read-only: {operation} refused")

    def config(self, warehouse: str | None, principal: Principal) -> dict[str, Any]:
        name = self.warehouse(warehouse)
        access = self.access
        if access is not None and access.enabled:
            access.require(principal, name, Role.READER, "iceberg config")
        return {"defaults": {}, "overrides": {"prefix": name}, "endpoints": ENDPOINTS}

    def _spell(self, catalog: str) -> Callable[[str], str]:
        """A REST namespace of warehouse ``catalog`` -> the database name the router takes: the
        plain name for the default catalog, ``@catalog#db`` (its native door) for another. A name
        the router would send elsewhere (``@x#db``; ``scratch__db``, another catalog's database
        under its prefix on the default door) is no namespace of this warehouse."""
        federation = self.router.federation
        default = catalog == self.manager.default_catalog

        def spell(db: str) -> str:
            name = db.lower()
            if name.startswith("@"):
                raise NoSuchNamespace((db,), f"Namespace does not exist: {db} (a namespace names no catalog: "
                                             "choose the catalog with the warehouse)")
            if not default:
                return f"@{catalog}#{name}"
            place = federation.locate(name)
            if place is not None and place.catalog != catalog:
                raise NoSuchNamespace((db,), f"Namespace does not exist: {db} (it is catalog {place.catalog}'s "
                                             f"database {place.database}: use warehouse {place.catalog})")
            return name
        return spell

    def _unspell(self, database: str) -> str:
        return database.rsplit("#", 1)[-1] if database.startswith("@") else database

    def _catalog_object(self, name: str) -> Catalog:
        catalog = self.manager.catalogs().get(name)
        if catalog is None:
            raise CatalogNotFoundError(f"no catalog {name!r}")
        return catalog

    def _check_location(self, catalog: Catalog) -> Callable[[str, str, tuple[str, str] | None], None]:
        def check(location: str, what: str, own: tuple[str, str] | None) -> None:
            target = catalog.relay_target()
            if own is not None:
                own = (self._unspell(own[0]), own[1])
            if target is None:
                self.router.memory_store(catalog.name).check_claim(location, what, own)
                return
            with target.files():
                # ``within``: the table's own directory is no conflict (a purge checks the table's
                # own location; hive's claim would name the table itself as the occupant), as the
                # memory store's ``used_by_others`` leaves its own table out.
                target.claim(location, what, own, within=own)
        return check

    def catalog(self, request: Request) -> WarehouseCatalog:
        """pyiceberg's ``HiveCatalog`` for the request's warehouse, as its caller."""
        catalog = self._catalog_object(request.warehouse)
        principal = request.principal
        name = None if principal.name == "anonymous" and (self.access is None or not self.access.enabled) \
            else principal.name
        conn = connection(name, request.peer)
        CONNECTION.set(conn)
        client = LoopbackClient(self.router.handle, conn)
        federation = self.router.federation
        warehouse = request.warehouse
        return WarehouseCatalog(warehouse, client, self._spell(warehouse), self.router.warehouse_location(catalog),
                                self._check_location(catalog), name, self.files,
                                lambda db: federation.client_name(warehouse, self._unspell(db)))

    # ------------------------------------------------------------ namespaces

    def list_namespaces(self, request: Request, parent: str | None) -> dict[str, Any]:
        self.require(request, write=False)
        if parent:
            # One level: a database has no namespaces below it; an unknown parent is a 404.
            self.load_namespace(request, parent)
            return {"namespaces": []}
        wh = self.catalog(request)
        federation = self.router.federation
        with wh._client as client:
            if request.warehouse == self.manager.default_catalog:
                names = [db for db in client.get_all_databases() if self._in_default(federation, db)]
            else:
                names = [self._unspell(db) for db in client.get_databases(f"@{request.warehouse}#*")]
        return {"namespaces": [[name] for name in sorted(names)]}

    def _in_default(self, federation: Any, database: str) -> bool:
        place = federation.locate(database)
        return place is None or place.catalog == self.manager.default_catalog

    def create_namespace(self, request: Request, raw: bytes) -> dict[str, Any]:
        self.require(request, write=True)
        body = _body(raw)
        namespace = body.get("namespace")
        if not isinstance(namespace, list) or not namespace or not all(isinstance(x, str) for x in namespace):
            raise InvalidArgumentError("namespace: a list of strings, one level (catalogd's namespaces are databases)")
        properties = body.get("properties") or {}
        if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
            raise InvalidArgumentError("properties: an object of strings")
        if len(namespace) != 1:
            raise InvalidArgumentError(f"namespace {'.'.join(namespace)}: catalogd's namespaces are databases, "
                                       "one level deep")
        wh = self.catalog(request)
        wh.create_namespace(wh.db(tuple(namespace)), properties)
        return {"namespace": namespace, "properties": properties}

    def load_namespace(self, request: Request, namespace: str) -> dict[str, Any]:
        self.require(request, write=False)
        ns = namespace_of(namespace)
        wh = self.catalog(request)
        properties = {k: v for k, v in wh.load_namespace_properties(wh.db(ns)).items() if v is not None}
        return {"namespace": list(ns), "properties": properties}

    def drop_namespace(self, request: Request, namespace: str) -> None:
        self.require(request, write=True)
        wh = self.catalog(request)
        wh.drop_namespace(wh.db(namespace_of(namespace)))

    def update_namespace(self, request: Request, namespace: str, raw: bytes) -> dict[str, Any]:
        self.require(request, write=True)
        body = _body(raw)
        removals = body.get("removals") or []
        updates = body.get("updates") or {}
        if not isinstance(removals, list) or not all(isinstance(x, str) for x in removals):
            raise InvalidArgumentError("removals: a list of strings")
        if not isinstance(updates, dict) or not all(isinstance(v, str) for v in updates.values()):
            raise InvalidArgumentError("updates: an object of strings")
        overlap = set(removals) & set(updates)
        if overlap:
            raise InvalidArgumentError(f"properties both removed and updated: {', '.join(sorted(overlap))}")
        if LOCATION in updates or LOCATION in removals:
            raise InvalidArgumentError("a namespace's location cannot change (HMS keeps a database's location)")
        wh = self.catalog(request)
        summary = wh.update_namespace_properties(wh.db(namespace_of(namespace)), set(removals), updates)
        return {"updated": sorted(summary.updated), "removed": sorted(summary.removed),
                "missing": sorted(summary.missing)}

    # ------------------------------------------------------------ tables

    def list_tables(self, request: Request, namespace: str) -> dict[str, Any]:
        self.require(request, write=False)
        ns = namespace_of(namespace)
        wh = self.catalog(request)
        database = wh.db(ns)
        wh.load_namespace_properties(database)  # a missing namespace is a 404, not an empty list
        names = sorted(table for _, table in wh.list_tables(database))
        return {"identifiers": [{"namespace": list(ns), "name": name} for name in names]}

    def load_table(self, request: Request, namespace: str, table: str) -> Loaded:
        self.require(request, write=False)
        ns = namespace_of(namespace)
        if len(ns) > 1:
            # No table lives in a nested namespace here, and the spec's answer to loadTable is
            # NoSuchTableException: Iceberg's Java client loads a metadata table (Spark's
            # `db.t.snapshots`) by first asking for table `snapshots` in namespace `db.t`, and falls
            # back to `db.t`'s metadata table only on NoSuchTableException.
            raise NoSuchTableError(f"table {'.'.join((*ns, table))} does not exist: catalogd's namespaces are "
                                   "databases, one level deep")
        wh = self.catalog(request)
        database = self._table_database(wh, ns, table)
        self.gate.wait(request.warehouse, ns[0], table)
        hive_table = self._hive_table(wh, database, table)
        location, data = wh.metadata_bytes(hive_table)
        return Loaded(location, _load_result(location, data))

    @staticmethod
    def _table_database(wh: WarehouseCatalog, ns: tuple[str, ...], table: str) -> str:
        """The database of a table's namespace; a namespace that cannot be one means no such table."""
        try:
            return wh.db(ns)
        except NoSuchNamespace:
            raise NoSuchTableError(f"Table does not exist: {'.'.join(ns)}.{table.lower()}") from None

    def _hive_table(self, wh: WarehouseCatalog, database: str, table: str) -> Any:
        try:
            hive_table = wh.hive_table(database, table.lower())
        except NoSuchTableError:
            # As Iceberg's CatalogHandlers: a table of a missing namespace is a missing table (404
            # NoSuchTableException, "Table does not exist: ns.t"); Java's client loads a metadata
            # table (ns.t.files) only after that answer for table "files" of namespace ns.t.
            raise NoSuchTableError(f"Table does not exist: {self._unspell(database)}.{table.lower()}") from None
        if is_iceberg_view(hive_table):
            # An Iceberg view is no table to the table endpoints (drop, rename, commit, load).
            raise NoSuchTableError(f"Table does not exist: {self._unspell(database)}.{table} (it is a view)")
        return hive_table

    def _iceberg_table(self, wh: WarehouseCatalog, database: str, table: str) -> Any:
        """The HMS table of an Iceberg table: a table the door neither lists nor loads (a Hive
        table, a view, catalogd's hidden stage) is not one it drops, renames or commits to (404)."""
        hive_table = self._hive_table(wh, database, table)
        if ((hive_table.parameters or {}).get("table_type") or "").lower() != "iceberg":
            raise NoSuchIcebergTableError(f"{database}.{table} is not an Iceberg table")
        return hive_table

    def create_table(self, request: Request, namespace: str, raw: bytes) -> Loaded:
        self.require(request, write=True)
        ns = namespace_of(namespace)
        # pyiceberg's model wants the optional fields present (the spec lets them out).
        create = CreateTableRequest.model_validate({"location": None, "partition-spec": None,
                                                    "write-order": None, **_body(raw)})
        wh = self.catalog(request)
        database = wh.db(ns)
        name = create.name.lower()
        from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
        from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

        spec = create.partition_spec or UNPARTITIONED_PARTITION_SPEC
        order = create.write_order or UNSORTED_SORT_ORDER
        # An existing table is a 409 first: the location check below would otherwise refuse its
        # default location as that very table's directory (403), naming the wrong problem.
        wh.load_namespace_properties(database)
        wh.name_free(database, name)  # a view of that name too
        if wh.table_exists((database, name)):
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ns)}.{name}")
        if create.stage_create:
            if create.location:
                # Nothing is written until the transaction's commit, which checks again; a location
                # that commit would refuse is refused now, not after the client wrote its data.
                wh.check_location(create.location.rstrip("/"), f"table {database}.{name}", None)
            staged = wh._create_staged_table((database, name), create.table_schema, create.location, spec, order,
                                             {**_defaults(), **create.properties})
            metadata = staged.metadata.model_dump_json().encode()
            return Loaded("", b'{"metadata":' + metadata + b',"config":{}}')
        table = wh.create_table((database, name), create.table_schema, create.location, spec, order,
                                create.properties)
        data = table.metadata.model_dump_json().encode()
        return Loaded(table.metadata_location, _load_result(table.metadata_location, data))

    def register_table(self, request: Request, namespace: str, raw: bytes) -> Loaded:
        self.require(request, write=True)
        ns = namespace_of(namespace)
        register = RegisterTableRequest.model_validate({"overwrite": False, **_body(raw)})
        if register.overwrite:
            raise InvalidArgumentError("register with overwrite is not supported: drop the table first")
        wh = self.catalog(request)
        database = wh.db(ns)
        wh.load_namespace_properties(database)
        if wh.table_exists((database, register.name.lower())):
            raise TableAlreadyExistsError(f"Table already exists: {'.'.join(ns)}.{register.name.lower()}")
        table = wh.register((database, register.name.lower()), register.metadata_location)
        data = table.metadata.model_dump_json().encode()
        return Loaded(table.metadata_location, _load_result(table.metadata_location, data))

    def table_exists(self, request: Request, namespace: str, table: str) -> bool:
        try:
            self.load_table(request, namespace, table)
        except (NoSuchTableError, NoSuchIcebergTableError, NoSuchNamespaceError, NoSuchNamespace):
            return False
        return True

    def commit_table(self, request: Request, namespace: str, table: str, raw: bytes) -> Loaded:
        self.require(request, write=True)
        body = _body(raw)
        if "identifier" in body:
            ns, name = _identifier(body["identifier"], "identifier")
            if (ns, name.lower()) != (namespace_of(namespace), table.lower()):
                raise InvalidArgumentError(f"the body's identifier {'.'.join(ns)}.{name} is not the path's table")
        requirements = _REQUIREMENTS.validate_python(body.get("requirements") or [])
        updates = _UPDATES.validate_python(body.get("updates") or [])
        wh = self.catalog(request)
        database = self._table_database(wh, namespace_of(namespace), table)
        name = table.lower()
        if not any(isinstance(r, AssertCreate) for r in requirements):
            self._iceberg_table(wh, database, name)  # a missing table is a 404, not a create
        else:
            wh.name_free(database, name, views_only=True)  # a view made since the stage-create: 409
        response = wh.commit_table(_Target((database, name)), tuple(requirements), tuple(updates))
        data = response.metadata.model_dump_json().encode()
        self.files.put(response.metadata_location, data)
        return Loaded(response.metadata_location, _commit_result(response.metadata_location, data))

    def drop_table(self, request: Request, namespace: str, table: str, purge: bool) -> None:
        self.require(request, write=True)
        wh = self.catalog(request)
        database = self._table_database(wh, namespace_of(namespace), table)
        hive_table = self._iceberg_table(wh, database, table.lower())
        if purge:
            from catalogd.iceberg.purge import purge_table

            purge_table(wh, database, table.lower(), hive_table)
            return
        wh.drop_table((database, table.lower()))

    def rename_table(self, request: Request, raw: bytes) -> None:
        self.require(request, write=True)
        body = _body(raw)
        src_ns, src = _identifier(body.get("source"), "source")
        dst_ns, dst = _identifier(body.get("destination"), "destination")
        wh = self.catalog(request)
        source = (wh.db(src_ns), src.lower())
        destination = (wh.db(dst_ns), dst.lower())
        self._iceberg_table(wh, *source)
        wh.load_namespace_properties(destination[0])
        wh.name_free(*destination, prefix=f"Cannot rename {'.'.join((*src_ns, src))} to {'.'.join((*dst_ns, dst))}. ")
        wh.rename_table(source, destination)

    def report_metrics(self, request: Request, namespace: str, table: str, raw: bytes) -> str:
        """A client's scan or commit report: accepted and counted (catalogd keeps no reports)."""
        self.require(request, write=False)
        body = _body(raw)
        kind = body.get("report-type")
        if kind not in ("scan-report", "commit-report"):
            raise InvalidArgumentError("report-type: scan-report or commit-report")
        return str(kind)

    def commit_transaction(self, request: Request, raw: bytes) -> None:
        """Several tables of the warehouse, all or none (``transactions``)."""
        self.require(request, write=True)
        body = _body(raw)
        entries = body.get("table-changes")
        if not isinstance(entries, list) or not entries:
            raise InvalidArgumentError("table-changes: a non-empty list of {identifier, requirements, updates}")
        wh = self.catalog(request)
        changes = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise InvalidArgumentError(f"table-changes[{i}]: an object")
            ns, name = _identifier(entry.get("identifier"), f"table-changes[{i}].identifier")
            try:
                database = wh.db(ns)
            except NoSuchNamespace as e:  # a transaction's tables name its warehouse's databases
                raise InvalidArgumentError(f"table-changes[{i}]: {e}") from None
            self._own_database(request.warehouse, database, ns[0])
            changes.append(Change(database, name.lower(),
                                  tuple(_REQUIREMENTS.validate_python(entry.get("requirements") or [])),
                                  tuple(_UPDATES.validate_python(entry.get("updates") or [])),
                                  name=ns[0].lower()))
        commit_tables(wh, changes, self.intents, self.gate, self.finisher)

    def _own_database(self, warehouse: str, database: str, namespace: str) -> None:
        """Refuse a namespace the router would route to another catalog than the warehouse's (the
        default catalog's warehouse sees the others' databases under their prefixes, ``@cat#db``
        names a catalog): a transaction is over tables of one catalog, the one its prefix names."""
        if namespace.startswith("@"):
            raise InvalidArgumentError(f"namespace {namespace!r}: a transaction's tables are in its warehouse's "
                                       f"catalog ({warehouse}): name them by their own namespaces")
        if database.startswith("@"):
            return  # a catalog's native door: always that catalog
        place = self.router.federation.locate(database)
        if place is None or place.catalog != warehouse:
            other = place.catalog if place is not None else "no catalog"
            raise InvalidArgumentError(f"namespace {namespace!r} is a database of {other}, not of {warehouse}: a "
                                       f"transaction commits to the tables of one catalog, the one its prefix names")

    def _internal(self, catalog: str) -> WarehouseCatalog:
        """A catalog's ``WarehouseCatalog`` as catalogd itself (no principal's grants apply)."""
        wh = self.catalog(Request(Principal("catalogd"), "catalogd", catalog))
        wh.conn.internal = True
        return wh

    def roll_forward(self) -> int:
        """Finish the multi-table commits a dead daemon left half done (at start, before serving);
        what cannot be finished now is retried in the background. Returns how many were finished."""
        if not self.intents.pending():
            return 0
        return self.finisher.start()

    def close(self) -> None:
        """Stop the background roll-forward (its intents stay for the next start)."""
        self.finisher.close()

    def check_job_token(self, principal: Principal, write: bool) -> None:
        if write and principal.job_scope is not None:
            raise PermissionDeniedError(f"{principal.name} is a refresh job's token: it writes only its stages")


def _defaults() -> dict[str, str]:
    from pyiceberg.catalog.hive import DEFAULT_PROPERTIES

    return dict(DEFAULT_PROPERTIES)


def _load_result(metadata_location: str, metadata: bytes) -> bytes:
    return (b'{"metadata-location":' + json.dumps(metadata_location).encode() + b',"metadata":' + metadata
            + b',"config":{}}')


def _commit_result(metadata_location: str, metadata: bytes) -> bytes:
    return b'{"metadata-location":' + json.dumps(metadata_location).encode() + b',"metadata":' + metadata + b"}"
