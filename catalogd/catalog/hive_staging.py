"""Stages on a Hive Metastore: atomic writes through hidden staging tables.

Every fact about a stage lives in HMS, in the ``catalogd.stage.*`` parameters of
its staging table (and, once committed, in the ``catalogd.last-commit`` tag of
the target), so a restarted daemon knows everything a crashed one knew.

The life of a stage, as stored:

* ``OPEN``: the staging table exists; a writer fills it and heartbeats.
* ``COMMITTING`` (REPLACE, OVERWRITE_PARTITIONS and APPEND): the commit has begun;
  what it replaces (APPEND: the files it moves, the partitions it adds) is recorded
  first, so an interrupted commit is finished by whoever finds it (roll forward).
* ``RETIRING``: committed; the staging table now points at the *replaced* data
  and is dropped, with those files, once ``staging.replaced-data-retention`` is
  over (queries planned before the commit can still read them).

CREATE publishes with one ``alter_table`` that renames the staging table to the
target; REPLACE with one ``alter_table`` that points the target at the new
storage; partitions switch with one ``alter_partitions`` plus one
``add_partitions`` call. APPEND adds the new partitions with one ``add_partitions``
and renames the staged files into the target's existing directories (only where the
daemon reaches them: the local file system).

A commit reads the staging table and the target once (and lists their partitions once) and
reuses that for every step. What is not part of its guarantee, deleting replaced versions past
``max-retired-versions``, a retention-0 purge, an append's emptied staging table, runs right after
it on a per-catalog housekeeping worker (``_later``); a failure there is left to the janitor.

Stages are signed: every time catalogd writes a staging table it stores an HMAC
(``catalogd.stage.signature``, key ``staging.secret``) of the table's database, name,
location and every ``catalogd.stage.*`` parameter. A staging table without a valid
signature (forged in the metastore, or changed behind catalogd's back) is never
committed, aborted, recovered or purged: its files stay, and a warning is logged.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import hmac
import json
import logging
import os
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import unquote, urlsplit

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.base import (
    STAGE_KEY_LENGTH,
    STAGE_TABLE_PREFIX,
    BaseCatalog,
    check_stage_key,
    is_lease_table,
    is_stage_table,
    new_stage_key,
)
from catalogd.catalog.hive_api import HiveClient
from catalogd.catalog.hive_client import HiveSession
from catalogd.config.durations import format_duration
from catalogd.errors import (
    AlreadyExistsError,
    CatalogError,
    ConflictError,
    DatabaseNotFoundError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    StageNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.faults import fault_point
from catalogd.hive_idl import ttypes as hms
from catalogd.hive_types import parse_type
from catalogd.model import Column, Stage, StagePurpose, StageRequest, StageState, Table, TableFormat, TableKind

logger = logging.getLogger(__name__)

PARAM = codec.STAGE_PREFIX
ID = PARAM + "id"
TARGET = PARAM + "target"
PURPOSE = PARAM + "purpose"
STATE = PARAM + "state"
OWNER = PARAM + "owner"
CREATED = PARAM + "created"
DEADLINE = PARAM + "lease-deadline"
#: The lease the writer asked for, milliseconds: an aborted stage's tombstone lasts two.
LEASE = PARAM + "lease"
COMMITTER = PARAM + "committer"
COMMIT_STARTED = PARAM + "commit-started"
OLD_LOCATION = PARAM + "old-location"
#: JSON ``{partition name: old location}``, split over ``.0``, ``.1``... (HMS values are short).
REPLACED = PARAM + "replaced"
#: APPEND: JSON ``{"moves": [[staged file, target file], ...], "add": [partition name, ...]}``, split
#: like REPLACED; written before any file moves, so an interrupted commit is finished from it.
APPEND_PLAN = PARAM + "append-plan"
#: The basic statistics an append makes wrong (HMS keeps them per table and partition).
_STATS = ("numFiles", "numRows", "rawDataSize", "totalSize", "COLUMN_STATS_ACCURATE")
DELETE_AFTER = PARAM + "delete-after"
#: REPLACE: ``existing`` when the target existed as the stage began. Such a stage replaces that
#: table; if it is dropped meanwhile, the drop wins (the commit aborts) rather than the commit
#: creating the table again (a refresh finishing after its dynamic table was dropped).
REPLACES = PARAM + "replaces"
#: The target's ``createTime`` as the stage began (a stage over an existing table): a table
#: dropped and created again meanwhile (another ``createTime``) is not the one the stage was
#: begun for, and the commit aborts. HMS keeps seconds: a drop and re-create within the same
#: second is not told apart.
TARGET_CREATED = PARAM + "target-created"
#: Why a stage was aborted (kept while its tombstone waits for late writes).
REASON = PARAM + "reason"
#: The HMAC that proves catalogd wrote the stage (see the module docstring).
SIGNATURE = PARAM + "signature"
_SIGNATURE_VERSION = "v1"
#: What get and list say of a staging table catalogd did not sign.
FORGED = ("not created by this catalogd (no valid signature; daemons sharing a metastore must share "
          "staging.secret): catalogd leaves it and its files alone")
#: The last commits a target remembers (``RECENT_COMMITS``): a commit retried after a
#: lost reply is recognised even when another stage committed since.
LAST_COMMIT, RECENT_COMMITS = codec.LAST_COMMIT, codec.RECENT_COMMITS
_RECENT = 10
#: Target parameters that survive a REPLACE (see _kept).
KEPT_ON_REPLACE = (codec.DYNAMIC_PREFIX,)
_PARAM_CHUNK = 3000
_KEY_LENGTH = STAGE_KEY_LENGTH
_FINISHED_CACHE = 4096
#: Forged staging tables already warned about (once per table, not every janitor pass).
_WARNED_CACHE = 4096


@dataclass
class _Read:
    """What a commit read under its target's lock before marking the stage COMMITTING, handed on
    so the rest of the commit does not read it again (nothing of this daemon changes them meanwhile)."""

    #: The target.
    existing: hms.Table
    #: The staging table's partitions and the target's (None: not listed).
    staged: list[hms.Partition] | None = None
    current: list[hms.Partition] | None = None


@dataclass
class _Chores:
    """Housekeeping a commit leaves for the background worker, per target (coalesced)."""

    target: str
    #: Retired stages to purge (retention 0, appends).
    purge: set[str] = field(default_factory=set)
    #: Trim the target's retired versions to ``max_retired``.
    trim: bool = False


class StoredState(StrEnum):
    """A stage's state as its staging table stores it (``catalogd.stage.state``, see the module docstring).

    OPEN, COMMITTING and ABORTED are the ``StageState`` of the same name; RETIRING is
    reported as COMMITTED. ABORTED is a tombstone: a stage whose lease lapsed keeps its
    table (and so its directory) a while, so files a still-running writer adds are deleted too.
    """

    OPEN = StageState.OPEN.value
    COMMITTING = StageState.COMMITTING.value
    RETIRING = "RETIRING"
    ABORTED = StageState.ABORTED.value

    @classmethod
    def of(cls, params: dict[str, str] | None) -> StoredState | None:
        """The state in a staging table's parameters: none stored is OPEN, one unknown is None."""
        try:
            return cls((params or {}).get(STATE, cls.OPEN.value))
        except ValueError:
            return None

    @property
    def public(self) -> StageState:
        return StageState.COMMITTED if self is StoredState.RETIRING else StageState(self.value)


# The one definition of a stage key, for hive and jdbc stages alike.
new_key = new_stage_key
check_key = check_stage_key


def _now_ms() -> int:
    return int(time.time() * 1000)


def _iso(ms: int | None) -> str:
    if ms is None:
        return "?"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def _user_params(params: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (params or {}).items() if not k.startswith(PARAM)}


def _kept(params: dict[str, str] | None) -> dict[str, str]:
    """The target's parameters a REPLACE keeps: catalogd's own definition of the table
    (a dynamic table's query, freshness and history), not the writer's properties."""
    return {k: v for k, v in (params or {}).items() if k.startswith(KEPT_ON_REPLACE)}


def _chunks(text: str, key: str = REPLACED) -> dict[str, str]:
    return {f"{key}.{i}": text[pos:pos + _PARAM_CHUNK] for i, pos in enumerate(range(0, len(text), _PARAM_CHUNK))}


def _read_chunked(params: dict[str, str], key: str) -> Any:
    parts = []
    index = 0
    while f"{key}.{index}" in params:
        parts.append(params[f"{key}.{index}"])
        index += 1
    return json.loads("".join(parts)) if parts else {}


def _read_replaced(params: dict[str, str]) -> dict[str, str]:
    replaced: dict[str, str] = _read_chunked(params, REPLACED)
    return replaced


def local_path(location: str | None) -> str | None:
    """The local path of a ``file:`` location (or one without a scheme); None for any other file system."""
    if not location:
        return None
    parts = urlsplit(location)
    if parts.scheme not in ("", "file") or parts.netloc not in ("", "localhost"):
        return None
    return unquote(parts.path) or None


def _visible_files(directory: str) -> list[str]:
    """The data files of a staged directory: Hive and Spark ignore names starting with ``_`` or ``.``
    (``_SUCCESS``, checksums), so they are not appended.

    Raises:
        UnsupportedError: a subdirectory holding data (Spark's writers produce none).
    """
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    files = []
    for entry in entries:
        if entry.name.startswith(("_", ".")):
            continue
        if not entry.is_file(follow_symlinks=False):
            raise UnsupportedError(f"{entry.path} is not a plain file: an append moves only the files of a directory")
        files.append(entry.path)
    return files


def append_plan(key: str, staged: dict[str, str], existing: dict[str, str]) -> tuple[list[list[str]], list[str]]:
    """What an append commit does, from staged directories and the target's current ones.

    Args:
        key: the stage's key: moved files are named ``<key>-<name>``, so they never replace a file
            of the target (Hive's ``000000_0`` repeats between inserts) and a retried move recognises
            its own result.
        staged: partition name ("" when unpartitioned) -> the staged directory (a local path).
        existing: partition name ("" when unpartitioned) -> the target's directory (a local path).

    Returns:
        (moves ``[[staged file, target file], ...]``, names of the partitions to add with their staged
        directory as location).
    """
    moves: list[list[str]] = []
    add: list[str] = []
    for name in sorted(staged):
        directory = staged[name]
        if name in existing:
            moves.extend([path, os.path.join(existing[name], f"{key}-{os.path.basename(path)}")]
                         for path in _visible_files(directory))
        else:
            add.append(name)
    return moves, add


def apply_moves(moves: list[list[str]]) -> int:
    """Rename each staged file into the target; safe to repeat (a file already moved is skipped).

    Returns:
        How many files this call moved.
    """
    moved = 0
    for source, dest in moves:
        if not os.path.lexists(source):
            continue  # moved by an earlier, interrupted run of this commit
        if os.path.lexists(dest):
            raise ConflictError(f"cannot append {source}: {dest} exists already")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        # One rename per file: atomic on a POSIX file system, so a reader sees each file whole or not at all.
        os.rename(source, dest)
        moved += 1
    return moved


def _commit_tags(stage: Stage, previous: dict[str, str] | None) -> dict[str, str]:
    """The parameters that mark a target as written by ``stage``."""
    recent = [e for e in (previous or {}).get(RECENT_COMMITS, "").split(",") if e and not e.startswith(stage.id + "=")]
    return {LAST_COMMIT: stage.id, RECENT_COMMITS: ",".join([f"{stage.id}={stage.purpose.value}", *recent][:_RECENT])}


def _committed_by(params: dict[str, str] | None, stage_id: str) -> StagePurpose | None:
    """The purpose with which ``stage_id`` committed into a table with these parameters, if it did."""
    for entry in (params or {}).get(RECENT_COMMITS, "").split(","):
        sid, _, purpose = entry.partition("=")
        if sid == stage_id:
            try:
                return StagePurpose.parse(purpose)
            except InvalidArgumentError:
                return StagePurpose.CREATE
    if (params or {}).get(LAST_COMMIT) == stage_id:
        return StagePurpose.CREATE
    return None


def _canonical_location(location: str | None) -> str:
    """One spelling per place: ``file:///x/`` and ``file:/x`` sign the same."""
    text = (location or "").rstrip("/")
    scheme, colon, rest = text.partition(":")
    if colon and rest.startswith("///"):
        rest = rest[2:]
    return f"{scheme}{colon}{rest}"


def stage_signature(secret: bytes, database: str, table: str, location: str | None,
                    params: Mapping[str, str] | None) -> str:
    """The signature of a staging table: an HMAC-SHA256 over its database, name, location and
    ``catalogd.stage.*`` parameters (all of them but the signature; the writer's own
    properties and the statistics Spark adds are not catalogd's and stay out)."""
    signed = sorted((k, v) for k, v in (params or {}).items() if k.startswith(PARAM) and k != SIGNATURE)
    message = json.dumps([_SIGNATURE_VERSION, database.lower(), table.lower(), _canonical_location(location), signed],
                         separators=(",", ":"))
    return f"{_SIGNATURE_VERSION}:{hmac.new(secret, message.encode(), hashlib.sha256).hexdigest()}"


def is_signed(secret: bytes, tbl: hms.Table) -> bool:
    """Whether this staging table carries a valid signature made with ``secret``."""
    params = tbl.parameters or {}
    given = params.get(SIGNATURE)
    if not given:
        return False
    location = tbl.sd.location if tbl.sd is not None else None
    expected = stage_signature(secret, tbl.dbName or "", tbl.tableName or "", location, params)
    return hmac.compare_digest(given.encode(), expected.encode())


def signed_owner(secret: bytes, tbl: hms.Table) -> str | None:
    """The owner this staging table records ("" when its writer named none), when catalogd
    signed it; None when it did not: an owner in an unsigned table is anyone's claim."""
    return (tbl.parameters or {}).get(OWNER, "") if is_signed(secret, tbl) else None


class HiveStager:
    """The stage operations of one hive catalog (see the module docstring).

    Args:
        session: the HMS session of the catalog whose metastore holds the stages.
        lease: the default lease, seconds.
        retention: how long replaced data is kept, seconds.
        committer: who commits (host and data dir): a restarted daemon is the same
            committer, so it finishes its own interrupted commits at once; others wait a lease.
        secret: the key stages are signed with (``staging.secret``).
        max_lease: the longest lease a writer may ask for, seconds.
        max_retired: replaced versions kept per table; a commit past it deletes the oldest.
    """

    def __init__(self, session: HiveSession, lease: float, retention: float, committer: str | None = None, *,
                 secret: bytes, max_lease: float = 3600.0, max_retired: int = 3) -> None:
        self.session = session
        self.name = session.name
        self.lease = lease
        self.retention = retention
        self.committer = committer or f"{socket.gethostname()}:{id(self)}"
        self.max_lease = max_lease
        self.max_retired = max_retired
        self._secret = secret
        self._guard = threading.Lock()
        self._warned: OrderedDict[tuple[str, str], None] = OrderedDict()
        #: Stages this process ended, newest last: answers get/commit without a scan.
        self._finished: OrderedDict[str, Stage] = OrderedDict()
        #: Targets of the stages this process began (a hint: saves a metastore read per commit).
        self._targets: OrderedDict[str, str] = OrderedDict()
        #: Housekeeping commits leave for the worker, per (database, target), oldest first; the
        #: worker's state is guarded by ``_chores_cv`` (see ``_later``).
        self._chores: OrderedDict[tuple[str, str], _Chores] = OrderedDict()
        self._chores_cv = threading.Condition()
        self._worker: threading.Thread | None = None
        self._working = False
        self._closed = False

    # ------------------------------------------------------------ plumbing

    def _client(
        self,
        what: str,
        not_found: type[NotFoundError] = TableNotFoundError,
        exists: type[AlreadyExistsError] = TableAlreadyExistsError,
    ) -> AbstractContextManager[HiveClient]:
        """The typed HMS client for a block; HMS errors leave it as catalogd errors naming ``what``."""
        return self.session.client(what, not_found, exists)

    def target_lock(self, database: str, target: str) -> AbstractContextManager[None]:
        """Commits and aborts on one target run one at a time in this daemon (shared with the catalog)."""
        return self.session.target_lock(database, target)

    @contextmanager
    def _locked(self, database: str, key: str) -> Iterator[hms.Table | None]:
        """The staging table read under its target's lock (None: it is gone).

        A stage this process began needs no read to find its target (a stage's target
        never changes): the lock first, then the one read.
        """
        with self._guard:
            target = self._targets.get(self._stage_id(database, key))
        if target is None:
            first = self._get_raw(database, key)
            if first is None:
                yield None
                return
            target = (first.parameters or {}).get(TARGET, "")
        with self.target_lock(database, target):
            yield self._get_raw(database, key)

    def _stage_id(self, database: str, key: str) -> str:
        return f"{self.name}.{database}.{key}"

    def _what(self, database: str, key: str) -> str:
        return f"stage {self._stage_id(database, key)}"

    def _get_raw(self, database: str, key: str) -> hms.Table | None:
        try:
            with self._client(self._what(database, key)) as c:
                return c.get_table(database, STAGE_TABLE_PREFIX + key)
        except TableNotFoundError:
            return None

    def _target_raw(self, database: str, name: str) -> hms.Table | None:
        try:
            with self._client(f"table {self.name}.{database}.{name}") as c:
                return c.get_table(database, name)
        except TableNotFoundError:
            return None

    def _alter(self, database: str, name: str, tbl: hms.Table, what: str) -> None:
        with self._client(what) as c:
            c.alter_table(database, name, tbl)

    def _alter_stage(self, database: str, tbl: hms.Table, what: str | None = None) -> None:
        """Write a staging table back, signed anew (its parameters or location changed)."""
        self._sign(tbl)
        self._alter(database, tbl.tableName, tbl, what or f"staging table {database}.{tbl.tableName}")

    def _sign(self, tbl: hms.Table) -> None:
        params = dict(tbl.parameters or {})
        params[SIGNATURE] = stage_signature(self._secret, tbl.dbName or "", tbl.tableName,
                                            tbl.sd.location if tbl.sd is not None else None, params)
        tbl.parameters = params

    def _authentic(self, database: str, tbl: hms.Table) -> bool:
        """Whether catalogd signed this staging table; warns (once per table) when it did not."""
        if is_signed(self._secret, tbl):
            return True
        with self._guard:
            first = (database, tbl.tableName) not in self._warned
            self._warned[(database, tbl.tableName)] = None
            while len(self._warned) > _WARNED_CACHE:
                self._warned.popitem(last=False)
        if first:
            location = tbl.sd.location if tbl.sd is not None else None
            logger.warning("staging table %s.%s (location %s) has %s signature: it was not created by this "
                           "catalogd (forged in the metastore, changed behind catalogd's back, or signed with "
                           "another staging.secret), so catalogd leaves it and its files alone", database,
                           tbl.tableName, location, "a wrong" if SIGNATURE in (tbl.parameters or {}) else "no")
        return False

    def signed_owner(self, tbl: hms.Table) -> str | None:
        """Who began the stage of this staging table, as catalogd signed it (see ``signed_owner``)."""
        return signed_owner(self._secret, tbl)

    def _check_authentic(self, database: str, key: str, tbl: hms.Table) -> None:
        """Raises PermissionDeniedError for a staging table catalogd did not sign."""
        if not self._authentic(database, tbl):
            raise PermissionDeniedError(f"{self._what(database, key)} was {FORGED}")

    def _check_lease(self, lease: float) -> None:
        if lease > self.max_lease:
            raise InvalidArgumentError(
                f"a lease of {format_duration(datetime.timedelta(seconds=lease))} is longer than "
                f"staging.max-lease ({format_duration(datetime.timedelta(seconds=self.max_lease))}): "
                "ask for a shorter one and heartbeat"
            )

    def _partitions(self, database: str, name: str) -> list[hms.Partition]:
        with self._client(f"table {self.name}.{database}.{name}") as c:
            return c.get_partitions(database, name, -1)

    def _remember(self, stage: Stage) -> Stage:
        with self._guard:
            self._finished[stage.id] = stage
            self._finished.move_to_end(stage.id)
            while len(self._finished) > _FINISHED_CACHE:
                self._finished.popitem(last=False)
        return stage

    def _to_stage(self, tbl: hms.Table, database: str) -> Stage:
        params = tbl.parameters or {}
        key = tbl.tableName[len(STAGE_TABLE_PREFIX):]
        stored = StoredState.of(params)
        state = stored.public if stored is not None else StageState.COMMITTED
        table = codec.to_table(self.name, tbl)
        message = None
        if not is_signed(self._secret, tbl):
            message = FORGED
        elif stored is StoredState.RETIRING:
            message = f"committed; the replaced data is deleted after {_iso(_int(params.get(DELETE_AFTER)))}"
        elif stored is StoredState.ABORTED:
            message = (f"aborted: {params.get(REASON) or 'lease lapsed'}; its files are deleted after "
                       f"{_iso(_int(params.get(DELETE_AFTER)))}")
        return Stage(
            id=self._stage_id(database, key),
            catalog=self.name,
            database=database,
            target=params.get(TARGET, ""),
            purpose=StagePurpose.parse(params.get(PURPOSE, "CREATE")),
            state=state,
            owner=params.get(OWNER) or None,
            created=_int(params.get(CREATED)),
            lease_deadline=_int(params.get(DEADLINE)),
            staging_table=tbl.tableName,
            location=table.location,
            columns=table.columns,
            partition_keys=table.partition_keys,
            format=table.format,
            message=message,
        )

    def _ended(self, database: str, key: str, target: str, purpose: StagePurpose, state: StageState,
               message: str) -> Stage:
        return self._remember(Stage(
            id=self._stage_id(database, key), catalog=self.name, database=database, target=target,
            purpose=purpose, state=state, message=message,
        ))

    def _find_committed(self, database: str, key: str) -> Stage | None:
        """The committed target that carries this stage's id, if any (a scan of the database)."""
        stage_id = self._stage_id(database, key)
        with self._guard:
            known = self._finished.get(stage_id)
        if known is not None:
            return known
        with self._client(f"database {self.name}.{database}", DatabaseNotFoundError) as c:
            names = [n for n in c.get_all_tables(database) if not is_stage_table(n)]
            for start in range(0, len(names), 100):
                for tbl in c.get_table_objects_by_name(database, names[start:start + 100]):
                    purpose = _committed_by(tbl.parameters, stage_id)
                    if purpose is not None:
                        return self._ended(database, key, tbl.tableName, purpose, StageState.COMMITTED,
                                           f"committed into {self.name}.{database}.{tbl.tableName}")
        return None

    # ------------------------------------------------------------ begin

    def begin(self, request: StageRequest) -> Stage:
        database, target = request.database, request.target
        what = f"table {self.name}.{database}.{target}"
        if is_stage_table(target):
            raise InvalidArgumentError(f"{what}: a staging table cannot be the target of a stage")
        existing = self._target_raw(database, target)
        database_location = None
        if existing is None:
            # A table found proves its database; without one, a missing database is named as such
            # (and its location, read here, places the staging table).
            with self._client(f"database {self.name}.{database}", DatabaseNotFoundError) as c:
                database_location = c.get_database(database).locationUri or ""
        key = new_key()
        purpose = request.purpose
        if existing is not None and existing.tableType in (codec.VIRTUAL_VIEW, codec.EXTERNAL_TABLE):
            kind = "a view" if existing.tableType == codec.VIRTUAL_VIEW else "an external table"
            if purpose is not StagePurpose.CREATE_IF_NOT_EXISTS:
                raise InvalidArgumentError(f"{what} is {kind}: stages write managed tables only")
        if purpose is StagePurpose.CREATE and existing is not None:
            raise TableAlreadyExistsError(f"{what} already exists")
        if purpose is StagePurpose.CREATE_IF_NOT_EXISTS and existing is not None:
            return self._ended(database, key, target, purpose, StageState.ABORTED,
                               f"{what} exists already; nothing to write")
        columns, partition_keys, fmt = request.columns, request.partition_keys, request.format
        location = None
        properties = dict(request.properties)
        reserved = sorted(k for k in properties if k.startswith(PARAM) or k in (LAST_COMMIT, RECENT_COMMITS))
        if reserved:
            raise InvalidArgumentError(f"{what}: properties {reserved} are reserved for catalogd")
        comment = request.comment
        if purpose in (StagePurpose.OVERWRITE_PARTITIONS, StagePurpose.APPEND):
            if existing is None:
                raise TableNotFoundError(f"{what} does not exist: "
                                         f"{'an append' if purpose is StagePurpose.APPEND else 'a partition overwrite'}"
                                         " needs an existing table")
            current = codec.to_table(self.name, existing)
            if purpose is StagePurpose.OVERWRITE_PARTITIONS and not current.partition_keys:
                raise InvalidArgumentError(f"{what} is not partitioned: overwrite it with REPLACE")
            if purpose is StagePurpose.APPEND and local_path(existing.sd.location) is None:
                # Appending into an existing directory moves files, and the daemon moves only
                # files it can reach itself (HMS has no call that merges directories).
                raise UnsupportedError(f"{what} is stored at {existing.sd.location}: catalogd appends atomically "
                                       "only to tables on the local file system (file:)")
            columns, partition_keys = self._same_schema(what, current, columns, partition_keys)
            if fmt is not None and fmt != current.format:
                raise InvalidArgumentError(f"{what} is stored as {current.format}, not {fmt}")
            fmt = current.format
            # Inside the target's directory (hidden from readers by the leading dot), so
            # the partitions it gives the target stay under the target's location.
            location = f"{existing.sd.location.rstrip('/')}/.catalogd-stage-{key}"
            properties, comment = {}, None
        if fmt is None:
            fmt = TableFormat.PARQUET
        now = _now_ms()
        lease = request.lease or self.lease
        self._check_lease(lease)
        properties.update({
            ID: self._stage_id(database, key),
            TARGET: target,
            PURPOSE: purpose.value,
            STATE: StoredState.OPEN.value,
            OWNER: request.owner or "",
            CREATED: str(now),
            DEADLINE: str(now + int(lease * 1000)),
            LEASE: str(int(lease * 1000)),
        })
        if existing is not None:
            properties[TARGET_CREATED] = str(existing.createTime or 0)
            if purpose is StagePurpose.REPLACE:
                properties[REPLACES] = "existing"
        table = Table(
            name=STAGE_TABLE_PREFIX + key, database=database, catalog=self.name, columns=columns,
            partition_keys=partition_keys, format=fmt, location=location, kind=TableKind.MANAGED,
            comment=comment, properties=properties,
        )
        if not columns:
            raise InvalidArgumentError(f"{what}: a stage needs at least one column")
        BaseCatalog.check_new_table(Table(**{**table.__dict__, "name": target}))
        if location is not None:
            # The location is known before HMS stores it: signed in the create itself (one
            # alter_table less), in the spelling the session gives HMS (it confines it so).
            location = self.session.roots().confine(location, f"table {self.name}.{database}.{table.name}").uri
            table.location = location
            table.properties[SIGNATURE] = stage_signature(self._secret, database, table.name, location,
                                                          table.properties)
        tbl = self.session.create_table(table, database_location)
        try:
            if not is_signed(self._secret, tbl):
                # Signed once HMS has chosen the location (the signature covers it), or
                # spelled it otherwise than predicted.
                self._alter_stage(database, tbl, self._what(database, key))
        except CatalogError:
            # Unsigned, nobody would ever clean it up: it is ours and empty, drop it now.
            try:
                self._drop_stage(database, tbl)
            except CatalogError as e:
                logger.warning("stage %s: dropping the unsigned staging table: %s", self._stage_id(database, key), e)
            raise
        logger.info("stage %s opened for %s (%s, lease %.0fs)", self._stage_id(database, key), what, purpose, lease)
        with self._guard:
            self._targets[self._stage_id(database, key)] = target
            while len(self._targets) > _FINISHED_CACHE:
                self._targets.popitem(last=False)
        return self._to_stage(tbl, database)

    @staticmethod
    def _same_schema(what: str, current: Table, columns: list[Column],
                     partition_keys: list[Column]) -> tuple[list[Column], list[Column]]:
        def norm(cols: list[Column]) -> list[tuple[str, str]]:
            return [(c.name.lower(), parse_type(c.type)) for c in cols]

        if columns and norm(columns) != norm(current.columns):
            raise InvalidArgumentError(
                f"{what}: the columns {[c for c, _ in norm(columns)]} do not match the table's "
                f"{[c for c, _ in norm(current.columns)]} (names and types, in order)"
            )
        if partition_keys and norm(partition_keys) != norm(current.partition_keys):
            raise InvalidArgumentError(
                f"{what}: the partition keys do not match the table's {[c.name for c in current.partition_keys]}"
            )
        return current.columns, current.partition_keys

    # ------------------------------------------------------------ get / list / heartbeat

    def get(self, database: str, key: str) -> Stage:
        check_key(key)
        tbl = self._get_raw(database, key)
        if tbl is not None:
            return self._to_stage(tbl, database)
        found = self._find_committed(database, key)
        if found is not None:
            return found
        raise StageNotFoundError(
            f"{self._what(database, key)} is not open: it was aborted (or its lease lapsed), or never existed"
        )

    def _raw_stages(self, databases: list[str] | None = None) -> list[tuple[str, hms.Table]]:
        """Every staging table (of ``databases``, default all), with its database."""
        found: list[tuple[str, hms.Table]] = []
        with self._client("list stages", DatabaseNotFoundError) as c:
            for database in databases if databases is not None else c.get_all_databases():
                # The metastore picks them out by name: a pass reads no other table's name.
                names = [n for n in c.get_tables(database, STAGE_TABLE_PREFIX + "*")
                         if is_stage_table(n) and not is_lease_table(n)]
                if names:
                    found.extend((database, t) for t in c.get_table_objects_by_name(database, names))
        return found

    def list_stages(self) -> list[Stage]:
        stages = [self._to_stage(tbl, database) for database, tbl in self._raw_stages()]
        return sorted(stages, key=lambda s: (s.created or 0, s.id))

    def _gone(self, database: str, key: str) -> Stage:
        """A stage without a staging table: COMMITTED if its target says so, else StageNotFoundError."""
        stage = self.get(database, key)
        if stage.state is not StageState.COMMITTED:
            raise StageNotFoundError(f"{self._what(database, key)} is not open: {stage.message}")
        return stage

    def heartbeat(self, database: str, key: str, lease: float | None = None) -> Stage:
        check_key(key)
        if lease is not None:
            self._check_lease(lease)
        with self._locked(database, key) as tbl:
            if tbl is not None:
                self._check_authentic(database, key, tbl)
                params = dict(tbl.parameters or {})
                state = StoredState.of(params)
                if state is StoredState.ABORTED:
                    raise ConflictError(f"{self._what(database, key)} was {self._to_stage(tbl, database).message}")
                if state is not StoredState.OPEN:
                    return self._to_stage(tbl, database)
                now = _now_ms()
                deadline = _int(params.get(DEADLINE)) or 0
                if deadline < now:
                    # The writer is still at work: keep a tombstone so its late files go too.
                    self._abort_locked(database, tbl, f"its lease lapsed at {_iso(deadline)}", tombstone=True)
                    raise ConflictError(
                        f"{self._what(database, key)}: its lease lapsed at {_iso(deadline)}; the stage was aborted"
                    )
                millis = int((lease or self.lease) * 1000)
                params[DEADLINE] = str(now + millis)
                params[LEASE] = str(millis)
                tbl.parameters = params
                self._alter_stage(database, tbl, self._what(database, key))
                return self._to_stage(tbl, database)
        return self._gone(database, key)

    # ------------------------------------------------------------ abort

    def abort(self, database: str, key: str, reason: str = "aborted", tombstone: bool = False) -> Stage:
        check_key(key)
        with self._locked(database, key) as tbl:
            if tbl is not None:
                self._check_authentic(database, key, tbl)
                params = tbl.parameters or {}
                state = StoredState.of(params)
                if state not in (StoredState.OPEN, StoredState.ABORTED):
                    raise ConflictError(
                        f"{self._what(database, key)} is committed (or committing); it cannot be aborted"
                    )
                if state is StoredState.ABORTED:
                    if tombstone:
                        return self._to_stage(tbl, database)
                    # Its writer says it stopped: nothing more can arrive, drop the tombstone now.
                    return self._abort_locked(database, tbl, params.get(REASON) or reason)
                return self._abort_locked(database, tbl, reason, tombstone=tombstone)
        committed = self._find_committed(database, key)
        if committed is not None and committed.state is StageState.COMMITTED:
            raise ConflictError(f"{self._what(database, key)} is committed; it cannot be aborted")
        return committed or self._ended(database, key, "", StagePurpose.CREATE, StageState.ABORTED,
                                        "no open stage (aborted already, or never existed)")

    def _abort_locked(self, database: str, tbl: hms.Table, reason: str, tombstone: bool = False) -> Stage:
        """Abort: drop the staging table and its files, or (``tombstone``) mark it ABORTED and drop it
        after a lease, because a writer that lost its lease may still be adding files."""
        stage = self._to_stage(tbl, database)
        if tombstone:
            params = dict(tbl.parameters or {})
            # Two of the writer's leases: a catalogd.spark writer notices the loss at its next
            # heartbeat (a third of a lease) and cancels its job well within that.
            grace = 2 * (_int(params.get(LEASE)) or int(self.lease * 1000))
            params.update({STATE: StoredState.ABORTED.value, REASON: reason, DELETE_AFTER: str(_now_ms() + grace)})
            tbl.parameters = params
            self._alter_stage(database, tbl, self._what(database, stage.id.rsplit(".", 1)[1]))
        else:
            self._drop_stage(database, tbl)
        logger.info("stage %s aborted: %s", stage.id, reason)
        return self._ended(database, stage.id.rsplit(".", 1)[1], stage.target, stage.purpose, StageState.ABORTED,
                           reason)

    def _drop_stage(self, database: str, tbl: hms.Table) -> None:
        """Drop the staging table with its files (and its partitions' files), where catalogd may delete them."""
        with suppress(TableNotFoundError):
            self.session.drop_table(database, tbl.tableName, purge=True)

    # ------------------------------------------------------------ commit

    def commit(self, database: str, key: str) -> Stage:
        check_key(key)
        with self._locked(database, key) as tbl:
            if tbl is not None:
                self._check_authentic(database, key, tbl)
                return self._commit_locked(database, key, tbl)
        found = self._find_committed(database, key)
        if found is not None and found.state is StageState.COMMITTED:
            return found
        if found is not None:
            raise StageNotFoundError(f"{self._what(database, key)} is not open: {found.message}")
        raise StageNotFoundError(
            f"{self._what(database, key)} is not open: it was aborted (or its lease lapsed), or never existed "
            f"(a commit older than the target's last {_RECENT} is not remembered either)"
        )

    def _commit_locked(self, database: str, key: str, tbl: hms.Table) -> Stage:
        params = dict(tbl.parameters or {})
        state = StoredState.of(params)
        stage = self._to_stage(tbl, database)
        if state is StoredState.RETIRING:
            return stage
        if state is StoredState.ABORTED:
            raise ConflictError(f"{stage.id} was {stage.message}; nothing was committed")
        if state is StoredState.OPEN:
            deadline = _int(params.get(DEADLINE)) or 0
            if deadline < _now_ms():
                self._abort_locked(database, tbl, f"its lease lapsed at {_iso(deadline)}")
                raise ConflictError(f"{stage.id}: its lease lapsed at {_iso(deadline)}; the stage was aborted")
        target = params.get(TARGET, "")
        if stage.purpose in (StagePurpose.CREATE, StagePurpose.CREATE_IF_NOT_EXISTS):
            # No look first: the rename itself fails when the target exists.
            return self._commit_create(database, key, tbl, stage, None)
        existing = self._target_raw(database, target)
        if (stage.purpose is StagePurpose.REPLACE and existing is None and state is StoredState.OPEN
                and params.get(REPLACES) != "existing"):
            return self._commit_create(database, key, tbl, stage, existing)
        if state is StoredState.OPEN:
            if existing is None:
                self._abort_locked(database, tbl, "the target table was dropped while the stage was open")
                raise TableNotFoundError(f"table {self.name}.{database}.{target} was dropped meanwhile; "
                                         "the stage was aborted")
            created = params.get(TARGET_CREATED)
            if created is not None and created != str(existing.createTime or 0):
                self._abort_locked(database, tbl, "the target table was dropped and created again while the "
                                                  "stage was open")
                raise ConflictError(f"table {self.name}.{database}.{target} was dropped and created again "
                                    "meanwhile; the stage, begun for the table before, was aborted")
            tbl, read = self._mark_committing(database, tbl, existing, stage.purpose)
            fault_point("commit.marked")
            return self._finish_commit(database, key, tbl, stage, read)
        return self._finish_commit(database, key, tbl, stage)

    def _commit_create(self, database: str, key: str, tbl: hms.Table, stage: Stage,
                       existing: hms.Table | None) -> Stage:
        target = stage.target
        what = f"table {self.name}.{database}.{target}"
        if existing is not None:
            return self._lost_race(database, tbl, stage, what)
        new = copy.deepcopy(tbl)
        new.tableName = target
        new.parameters = {**_user_params(tbl.parameters), **_commit_tags(stage, None)}
        if codec.spark_path(new) is not None:
            # Spark reads a data source table where `path` says; HMS moves the files to
            # <database dir>/<target> in this very call.
            with self._client(f"database {self.name}.{database}", DatabaseNotFoundError) as c:
                db_location = c.get_database(database).locationUri
            codec.set_spark_path(new, f"{db_location.rstrip('/')}/{target.lower()}")
        fault_point("commit.before-rename")
        try:
            self._alter(database, tbl.tableName, new, what)
        except (TableAlreadyExistsError, InvalidArgumentError) as e:
            if self._target_raw(database, target) is not None:
                return self._lost_race(database, tbl, stage, what)
            raise InvalidArgumentError(f"{what}: the metastore refused the commit: {e.message}") from e
        fault_point("commit.after-rename")
        logger.info("stage %s committed: created %s", stage.id, what)
        return self._ended(database, key, target, stage.purpose, StageState.COMMITTED, f"created {what}")

    def _lost_race(self, database: str, tbl: hms.Table, stage: Stage, what: str) -> Stage:
        """The target exists: CREATE fails (and aborts), CREATE_IF_NOT_EXISTS aborts quietly."""
        self._abort_locked(database, tbl, f"{what} appeared while the stage was open")
        if stage.purpose is StagePurpose.CREATE_IF_NOT_EXISTS:
            return self._ended(database, stage.id.rsplit(".", 1)[1], stage.target, stage.purpose,
                               StageState.ABORTED, f"{what} exists already; nothing written")
        raise TableAlreadyExistsError(
            f"{what} already exists (created while the stage was open); the stage was aborted"
        )

    def _mark_committing(self, database: str, tbl: hms.Table, existing: hms.Table,
                         purpose: StagePurpose) -> tuple[hms.Table, _Read]:
        """Record what the commit replaces before touching the target, so anyone can finish it.

        Returns:
            The staging table as written, and what was read of the target (for the rest of the commit).
        """
        params = dict(tbl.parameters or {})
        replaced: dict[str, str] = {}
        read = _Read(existing)
        if existing.partitionKeys:
            # Listed once for the whole commit: the plan or the replaced locations, then the switch.
            read.staged = self._partitions(database, tbl.tableName)
            read.current = self._partitions(database, existing.tableName)
        if purpose is StagePurpose.APPEND:
            try:
                plan = self._append_plan(database, tbl, read)
            except UnsupportedError as e:
                # Nothing was moved yet: the stage can never commit, so it goes now, not at its lease's end.
                self._abort_locked(database, tbl, e.message)
                raise UnsupportedError(f"{e.message}; the stage was aborted") from e
            params.update(_chunks(json.dumps(plan, sort_keys=True), APPEND_PLAN))
        elif read.staged is not None and read.current is not None:
            staged = {codec.partition_name(tbl.partitionKeys, p.values) for p in read.staged}
            for part in read.current:
                name = codec.partition_name(existing.partitionKeys, part.values)
                if purpose is StagePurpose.REPLACE or name in staged:
                    replaced[name] = part.sd.location
        params.update({
            STATE: StoredState.COMMITTING.value,
            COMMITTER: self.committer,
            COMMIT_STARTED: str(_now_ms()),
            OLD_LOCATION: existing.sd.location or "",
            **_chunks(json.dumps(replaced, sort_keys=True)),
        })
        tbl.parameters = params
        self._alter_stage(database, tbl)
        return tbl, read

    def _append_plan(self, database: str, tbl: hms.Table, read: _Read) -> dict[str, Any]:
        """The moves and partition additions of an APPEND commit (see ``append_plan``).

        Raises:
            UnsupportedError: a directory involved is not on the local file system.
        """
        def local(location: str | None) -> str:
            path = local_path(location)
            if path is None:
                raise UnsupportedError(f"{location} is not on the local file system: catalogd cannot move "
                                       "files there, so it cannot append to it")
            return path

        existing = read.existing
        if read.staged is not None and read.current is not None:
            staged = {codec.partition_name(tbl.partitionKeys, p.values): local(p.sd.location) for p in read.staged}
            current = {codec.partition_name(existing.partitionKeys, p.values): p.sd.location for p in read.current}
            # Only the partitions the stage wrote need a reachable directory.
            targets = {name: local(location) for name, location in current.items() if name in staged}
        else:
            staged = {"": local(tbl.sd.location)}
            targets = {"": local(existing.sd.location)}
        moves, add = append_plan(tbl.tableName[len(STAGE_TABLE_PREFIX):], staged, targets)
        return {"moves": moves, "add": add}

    def _finish_append(self, database: str, tbl: hms.Table, stage: Stage, existing: hms.Table | None,
                       read: _Read | None) -> None:
        """Roll an APPEND forward: move the files into existing directories, add the new partitions in
        one call, mark the target. Every step is safe to repeat (see ``apply_moves``)."""
        target = stage.target
        what = f"table {self.name}.{database}.{target}"
        if existing is None:
            self._retire(database, tbl, stage)
            raise TableNotFoundError(f"{what} was dropped during the commit")
        plan = _read_chunked(tbl.parameters or {}, APPEND_PLAN)
        moves: list[list[str]] = plan.get("moves", [])
        try:
            apply_moves(moves)
        except OSError as e:
            raise InternalError(f"{what}: moving the appended files failed (the commit is finished when "
                                f"retried): {e}") from e
        fault_point("commit.moved")
        stats_free = {k: v for k, v in (existing.parameters or {}).items() if k not in _STATS}
        if existing.partitionKeys:
            add = set(plan.get("add", []))
            # The moves change files, not partitions: what the commit listed before still holds.
            staged_parts = read.staged if read is not None and read.staged is not None else None
            current_parts = read.current if read is not None and read.current is not None else None
            staged = {codec.partition_name(tbl.partitionKeys, p.values): p
                      for p in (staged_parts if staged_parts is not None
                                else self._partitions(database, tbl.tableName))}
            current = {codec.partition_name(existing.partitionKeys, p.values): p
                       for p in (current_parts if current_parts is not None else self._partitions(database, target))}
            added = [hms.Partition(values=list(part.values), dbName=database, tableName=target,
                                   createTime=int(time.time()), lastAccessTime=0, sd=copy.deepcopy(part.sd),
                                   parameters=dict(part.parameters or {}))
                     for name, part in sorted(staged.items()) if name in add and name not in current]
            # The partitions that received files: their statistics no longer count them.
            touched = [current[name] for name in sorted(staged) if name in current and name not in add
                       and any(k in (current[name].parameters or {}) for k in _STATS)]
            for part in touched:
                part.parameters = {k: v for k, v in (part.parameters or {}).items() if k not in _STATS}
            with self._client(what) as c:
                if added:
                    c.add_partitions(added)
                if touched:
                    c.alter_partitions(database, target, touched)
        if (existing.parameters or {}).get(LAST_COMMIT) != stage.id:
            # Unpartitioned, this call also drops the table statistics the new files made wrong.
            existing.parameters = {**(stats_free if not existing.partitionKeys else existing.parameters or {}),
                                   **_commit_tags(stage, existing.parameters)}
            self._alter(database, target, existing, what)
        for source, _ in moves:
            # What is left of a staged directory is Spark's bookkeeping (_SUCCESS, .crc files).
            directory = os.path.dirname(source)
            if existing.partitionKeys and os.path.isdir(directory):
                for leftover in os.listdir(directory):
                    with suppress(OSError):
                        os.remove(os.path.join(directory, leftover))
                with suppress(OSError):
                    os.rmdir(directory)

    def _finish_commit(self, database: str, key: str, tbl: hms.Table, stage: Stage, read: _Read | None = None) -> Stage:
        """Roll a COMMITTING stage forward; every step is safe to repeat.

        ``read``: what the commit that just marked the stage read of the target (None: a commit
        found COMMITTING, by a retry or the janitor: read again).
        """
        target = stage.target
        what = f"table {self.name}.{database}.{target}"
        existing = read.existing if read is not None else self._target_raw(database, target)
        if stage.purpose is StagePurpose.APPEND:
            self._finish_append(database, tbl, stage, existing, read)
            fault_point("commit.partitions")
            self._retire(database, tbl, stage)
            logger.info("stage %s committed: appended to %s", stage.id, what)
            # Nothing was replaced, so there is nothing for readers to keep.
            self._later(database, target, purge=key)
            return self._ended(database, key, target, stage.purpose, StageState.COMMITTED, f"appended to {what}")
        staged = read.staged if read is not None else None
        current = read.current if read is not None else None
        if stage.purpose is StagePurpose.REPLACE:
            if ((existing is None or (existing.parameters or {}).get(LAST_COMMIT) != stage.id)
                    and not self._switch_table(database, tbl, existing, stage, what)):
                current = None  # a new table: its partitions are read again (none)
            fault_point("commit.switched")
            self._sync_partitions(database, tbl, target, drop_others=True, staged=staged, current=current)
        else:
            if existing is None:
                # Dropped in the middle of the commit: there is nothing left to overwrite.
                self._retire(database, tbl, stage)
                raise TableNotFoundError(f"{what} was dropped during the commit")
            self._sync_partitions(database, tbl, target, drop_others=False, staged=staged, current=current)
            fault_point("commit.switched")
            # The partition calls leave the table itself as it was read.
            if (existing.parameters or {}).get(LAST_COMMIT) != stage.id:
                existing.parameters = {**(existing.parameters or {}), **_commit_tags(stage, existing.parameters)}
                self._alter(database, target, existing, what)
        fault_point("commit.partitions")
        self._retire(database, tbl, stage)
        fault_point("commit.retired")
        done = "replaced" if stage.purpose is StagePurpose.REPLACE else "overwrote partitions of"
        logger.info("stage %s committed: %s %s", stage.id, done, what)
        if self.retention <= 0:
            self._later(database, target, purge=key)
        else:
            self._later(database, target, trim=True)
        return self._ended(database, key, target, stage.purpose, StageState.COMMITTED, f"{done} {what}")

    def _switch_table(self, database: str, tbl: hms.Table, existing: hms.Table | None, stage: Stage,
                      what: str) -> bool:
        """Point the target at the staged storage: one alter_table, or drop + create when HMS refuses that.

        Returns:
            Whether the existing table was altered in place (it keeps its partitions); False: created anew.
        """
        new = copy.deepcopy(tbl)
        new.tableName = stage.target
        new.parameters = {**_user_params(tbl.parameters),
                          **_kept(existing.parameters if existing is not None else None),
                          **_commit_tags(stage, existing.parameters if existing is not None else None)}
        new.tableType = codec.MANAGED_TABLE
        if existing is not None and codec.same_columns(existing.partitionKeys, tbl.partitionKeys):
            new.owner = existing.owner or new.owner
            new.createTime = existing.createTime
            try:
                self._alter(database, stage.target, new, what)
                return True
            except InvalidArgumentError as e:
                logger.warning("%s: the metastore refused to swap the storage in one call (%s); "
                               "dropping and re-creating the table instead", what, e.message)
        # Partition keys differ (HMS cannot change them) or HMS refused the change: the
        # weaker path. Readers see no table for the moment between the two calls.
        if existing is not None:
            # Not beside a background pass's read of its partitions: on Derby the two deadlock.
            with self._client(what) as c, self.session.locations.dropping(database, stage.target):
                c.drop_table(database, stage.target, False)
        fault_point("commit.dropped")
        with self._client(what) as c:
            c.create_table(new)
        return False

    def _sync_partitions(self, database: str, tbl: hms.Table, target: str, drop_others: bool,
                         staged: list[hms.Partition] | None = None, current: list[hms.Partition] | None = None) -> None:
        """Make the target's partitions for the staged values point at the staged files.

        ``staged``, ``current``: the staging table's and the target's partitions as the commit
        listed them (None: listed here).
        """
        if not tbl.partitionKeys:
            return
        what = f"table {self.name}.{database}.{target}"
        if staged is None:
            staged = self._partitions(database, tbl.tableName)
        if current is None:
            current = self._partitions(database, target)
        by_values = {tuple(p.values): p for p in current}
        changed: list[hms.Partition] = []
        added: list[hms.Partition] = []
        for part in staged:
            values = tuple(part.values)
            have = by_values.get(values)
            if have is not None and have.sd.location == part.sd.location:
                continue
            new = hms.Partition(
                values=list(part.values), dbName=database, tableName=target,
                createTime=have.createTime if have else int(time.time()), lastAccessTime=0,
                sd=copy.deepcopy(part.sd), parameters=dict(part.parameters or {}),
            )
            (changed if have is not None else added).append(new)
        with self._client(what) as c:
            if changed:
                c.alter_partitions(database, target, changed)
            if added:
                c.add_partitions(added)
            if drop_others:
                keep = {tuple(p.values) for p in staged}
                for values in [v for v in by_values if v not in keep]:
                    # Metadata only: the files go with the old table directory.
                    c.drop_partition(database, target, list(values), False)

    def _retire(self, database: str, tbl: hms.Table, stage: Stage) -> None:
        """Committed: the staging table now stands for the replaced data until it is purged."""
        key = stage.id.rsplit(".", 1)[1]
        # ``tbl`` is as the commit wrote it (marked COMMITTING) or read it: nobody else writes a
        # committing stage, so it is not read again.
        self._check_authentic(database, key, tbl)
        params = dict(tbl.parameters or {})
        if stage.purpose is StagePurpose.REPLACE:
            location = params.get(OLD_LOCATION) or f"{tbl.sd.location}/.retired"
        elif stage.purpose is StagePurpose.APPEND and not tbl.partitionKeys:
            # Its files were moved into the target: what is left (_SUCCESS) goes with the staging table.
            location = tbl.sd.location
        else:
            location = f"{tbl.sd.location.rstrip('/')}/.retired"
        params.update({STATE: StoredState.RETIRING.value, DELETE_AFTER: str(_now_ms() + int(self.retention * 1000))})
        tbl.parameters = params
        tbl.sd.location = location
        if codec.spark_path(tbl) is not None:
            codec.set_spark_path(tbl, location)
        self._alter_stage(database, tbl)

    def _purge(self, database: str, key: str) -> None:
        """Delete a retired stage: its partitions are re-pointed at the replaced files first."""
        tbl = self._get_raw(database, key)
        if tbl is None or StoredState.of(tbl.parameters) is not StoredState.RETIRING:
            return
        if not self._authentic(database, tbl):
            return
        params = tbl.parameters or {}
        if tbl.partitionKeys:
            replaced = _read_replaced(params)
            partitions = self._partitions(database, tbl.tableName)
            repoint = []
            with self._client(f"staging table {database}.{tbl.tableName}") as c:
                for part in partitions:
                    old = replaced.get(codec.partition_name(tbl.partitionKeys, part.values))
                    if PURPOSE in params and params[PURPOSE] == StagePurpose.OVERWRITE_PARTITIONS.value and old:
                        if part.sd.location != old:
                            part.sd.location = old
                            repoint.append(part)
                    else:
                        # The target owns these files now (REPLACE: the old ones go with the old directory).
                        c.drop_partition(database, tbl.tableName, part.values, False)
                if repoint:
                    c.alter_partitions(database, tbl.tableName, repoint)
        self._drop_stage(database, tbl)
        logger.info("stage %s: replaced data deleted", self._stage_id(database, key))

    # ------------------------------------------------------------ housekeeping (after a commit)

    def _later(self, database: str, target: str, purge: str | None = None, trim: bool = False) -> None:
        """Leave a committed stage's housekeeping to the background worker: not part of the commit's
        guarantee (the target is switched and the stage RETIRING, which anyone finishes), so off the
        caller's path. Requests for one target coalesce; a failure is logged and left to the janitor,
        which deletes every retired version once its retention is over (``_due``)."""
        with self._chores_cv:
            if self._closed:
                return
            chores = self._chores.get((database, target.lower()))
            if chores is None:
                chores = self._chores[(database, target.lower())] = _Chores(target)
            if purge is not None:
                chores.purge.add(purge)
            chores.trim = chores.trim or trim
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name=f"stage-housekeeping-{self.name}",
                                                daemon=True)
                self._worker.start()
            self._chores_cv.notify_all()

    def _work(self) -> None:
        while True:
            with self._chores_cv:
                while not self._chores and not self._closed:
                    self._chores_cv.wait()
                if self._closed:
                    return
                (database, _), chores = self._chores.popitem(last=False)
                self._working = True
            try:
                self._housekeep(database, chores)
            except Exception:  # the worker must outlive any one table's trouble
                logger.exception("housekeeping of %s.%s failed (the janitor deletes its replaced data when "
                                 "the retention ends)", database, chores.target)
            finally:
                with self._chores_cv:
                    self._working = False
                    self._chores_cv.notify_all()

    def _housekeep(self, database: str, chores: _Chores) -> None:
        """Purge the stages named, then trim the target's retired versions; each purge under the target's
        lock, deciding again from the staging table as it is then (the janitor may have come first)."""
        for key in sorted(chores.purge):
            try:
                with self.target_lock(database, chores.target):
                    self._purge(database, key)
            except CatalogError as e:
                logger.warning("stage %s: deleting the replaced data: %s (the janitor retries)",
                               self._stage_id(database, key), e)
        if chores.trim:
            self._trim_retired(database, chores.target)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the housekeeping asked so far is done; False if ``timeout`` passed first (for tests)."""
        with self._chores_cv:
            return self._chores_cv.wait_for(lambda: self._closed or not (self._chores or self._working), timeout)

    def close(self) -> None:
        """Stop the worker; what it had still to do is left to the janitor."""
        with self._chores_cv:
            self._closed = True
            self._chores.clear()
            self._chores_cv.notify_all()

    def _trim_retired(self, database: str, target: str) -> None:
        """Keep at most ``max_retired`` replaced versions of a table: the oldest go before their
        retention is over (a table that commits every few seconds would keep hundreds).

        Run by the housekeeping worker: listed without the lock, each purge under it.
        """
        try:
            retired = [tbl for _, tbl in self._raw_stages([database])
                       if (tbl.parameters or {}).get(TARGET, "").lower() == target.lower()
                       and StoredState.of(tbl.parameters) is StoredState.RETIRING and self._authentic(database, tbl)]
            if len(retired) <= self.max_retired:
                return
            retired.sort(key=lambda t: (_int((t.parameters or {}).get(COMMIT_STARTED)) or 0,
                                        _int((t.parameters or {}).get(DELETE_AFTER)) or 0))
            for tbl in retired[:len(retired) - self.max_retired]:
                key = tbl.tableName[len(STAGE_TABLE_PREFIX):]
                logger.info("stage %s: deleting the replaced data early: %s.%s keeps at most %d replaced "
                            "versions (staging.max-retired-versions)", self._stage_id(database, key), database,
                            target, self.max_retired)
                with self.target_lock(database, target):
                    self._purge(database, key)
        except CatalogError as e:
            logger.warning("deleting the oldest replaced versions of %s.%s: %s (deleted when their retention ends)",
                           database, target, e)

    def purge_retired_for(self, database: str, target: str) -> None:
        """The target was dropped: delete the data its REPLACEs kept for readers now.

        Otherwise a new table of the same name could take the old default directory
        and lose it when the retention ends.
        """
        try:
            for _, tbl in self._raw_stages([database]):
                params = tbl.parameters or {}
                if (params.get(TARGET) == target and StoredState.of(params) is StoredState.RETIRING
                        and self._authentic(database, tbl)):
                    with self.target_lock(database, target):
                        self._purge(database, tbl.tableName[len(STAGE_TABLE_PREFIX):])
        except CatalogError as e:
            logger.warning("deleting the replaced data of dropped table %s.%s: %s (the janitor retries)",
                           database, target, e)

    # ------------------------------------------------------------ janitor

    def janitor_pass(self, startup: bool = False, fence: Callable[[], bool] | None = None) -> int:
        """One sweep over every staging table of the catalog; returns how many stages it acted on.

        ``fence``: asked before each stage is acted on; False ends the pass (another member leads).
        """
        acted = 0
        for database, listed in self._raw_stages():
            key = listed.tableName[len(STAGE_TABLE_PREFIX):]
            if not self._authentic(database, listed) or not self._due(listed, startup):
                continue
            if fence is not None and not fence():
                logger.info("janitor: this member no longer leads the cluster; the pass ends")
                break
            try:
                # Decided again under the lock: a commit or heartbeat may have come first.
                with self.target_lock(database, (listed.parameters or {}).get(TARGET, "")):
                    tbl = self._get_raw(database, key)
                    if tbl is not None and self._authentic(database, tbl) and self._due(tbl, startup):
                        self._clean(database, key, tbl)
                        acted += 1
            except CatalogError as e:
                logger.warning("janitor: stage %s: %s", self._stage_id(database, key), e)
        return acted

    def _due(self, tbl: hms.Table, startup: bool) -> bool:
        """Whether the janitor must act on this staging table now."""
        params = tbl.parameters or {}
        state, now = StoredState.of(params), _now_ms()
        if state is StoredState.OPEN:
            return (_int(params.get(DEADLINE)) or 0) < now
        if state in (StoredState.ABORTED, StoredState.RETIRING):
            return (_int(params.get(DELETE_AFTER)) or 0) <= now
        return state is StoredState.COMMITTING and self._may_recover(params, now, startup)

    def _clean(self, database: str, key: str, tbl: hms.Table) -> None:
        """What the janitor does to a stage that is due (under its target's lock)."""
        state = StoredState.of(tbl.parameters)
        stage_id = self._stage_id(database, key)
        if state is StoredState.OPEN:
            self._abort_locked(database, tbl, "its lease lapsed", tombstone=True)
        elif state is StoredState.ABORTED:
            self._drop_stage(database, tbl)
            logger.info("stage %s: files of the aborted stage deleted", stage_id)
        elif state is StoredState.COMMITTING:
            logger.warning("stage %s: finishing a commit that was interrupted", stage_id)
            self._finish_commit(database, key, tbl, self._to_stage(tbl, database))
        else:
            self._purge(database, key)

    def _may_recover(self, params: dict[str, str], now: int, startup: bool) -> bool:
        """Whether an interrupted commit is ours to finish (nobody else can be running it)."""
        if params.get(COMMITTER) == self.committer:
            # Ours: at startup nothing of ours runs; later, only commits past a lease are stuck.
            return startup or (_int(params.get(COMMIT_STARTED)) or 0) + int(self.lease * 1000) < now
        return (_int(params.get(COMMIT_STARTED)) or 0) + int(self.lease * 1000) < now


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None
