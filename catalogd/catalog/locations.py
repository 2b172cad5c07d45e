"""Where a hive catalog may put files and which directories it may delete: location URIs, normalised and judged.

A location is read the way Hadoop's ``Path`` reads it (scheme, ``//authority``,
then everything else is the path, ``..`` resolved), then made comparable: scheme
and authority lower-cased, duplicate and trailing slashes removed, and for
``file:`` symbolic links resolved and case folded where the file system ignores
case. Two locations are compared only on the same scheme and authority: ``s3`` and
``s3a`` of one bucket, or ``hdfs:///x`` and ``hdfs://nn/x``, are different places,
so a spelling catalogd cannot prove to be inside an allowed root is refused.

No I/O besides looking at the local file system for ``file:`` locations; the hive
catalog gathers the locations of its objects and asks :class:`Roots` and
:func:`deletion_blocker` what it may do.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from catalogd.errors import InvalidArgumentError, PermissionDeniedError

logger = logging.getLogger(__name__)

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_SLASHES = re.compile(r"/+")


class LocalFiles:
    """What ``file:`` locations need of the local file system (a fake in unit tests)."""

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def case_insensitive(self, path: str) -> bool:
        """Whether the file system holding ``path`` (its deepest existing ancestor) ignores case."""
        probe = path
        while True:
            if os.path.lexists(probe):
                break
            parent = os.path.dirname(probe)
            if parent == probe:
                return False
            probe = parent
        # The first ancestor whose name has letters tells: is its other-case twin the same file?
        while probe != os.path.dirname(probe):
            name = os.path.basename(probe)
            if name.swapcase() != name:
                twin = os.path.join(os.path.dirname(probe), name.swapcase())
                try:
                    return os.path.samefile(probe, twin)
                except OSError:
                    return False
            probe = os.path.dirname(probe)
        return False


LOCAL_FILES = LocalFiles()


@dataclass(frozen=True)
class Location:
    """A normalised location: compare with :meth:`contains`, show with ``str()``."""

    scheme: str
    authority: str
    #: Absolute, normalised, no trailing slash (``/`` alone for the root of a file system).
    path: str
    #: ``path`` as compared: case folded where the file system ignores case.
    key: str = field(compare=False)

    def __str__(self) -> str:
        # Never show credentials someone put in an authority (s3a://key:secret@bucket/).
        host = self.authority.rpartition("@")[2]
        if not self.scheme:
            return self.path
        return f"{self.scheme}://{host}{self.path}" if host else f"{self.scheme}:{self.path}"

    @property
    def uri(self) -> str:
        """The full URI, authority and all, spelled as Hadoop does (``file:/x``): what catalogd hands the metastore."""
        if not self.scheme:
            return self.path
        return f"{self.scheme}://{self.authority}{self.path}" if self.authority else f"{self.scheme}:{self.path}"

    def _same_fs(self, other: Location) -> bool:
        return (self.scheme, self.authority) == (other.scheme, other.authority)

    def contains(self, other: Location) -> bool:
        """``other`` is this directory or inside it."""
        if not self._same_fs(other):
            return False
        if self.key == other.key:
            return True
        return other.key.startswith(self.key if self.key.endswith("/") else self.key + "/")

    def strictly_contains(self, other: Location) -> bool:
        """``other`` is inside this directory, not this directory itself."""
        return self.contains(other) and self.key != other.key

    def same(self, other: Location) -> bool:
        return self._same_fs(other) and self.key == other.key

    def child(self, name: str) -> str:
        """The URI of an entry of this directory."""
        return f"{self.uri}/{name}" if self.path != "/" else f"{self.uri}{name}"

    def parent(self) -> Location:
        path = posixpath.dirname(self.path)
        key = posixpath.dirname(self.key)
        return Location(self.scheme, self.authority, path, key)


def parse(uri: str, default_fs: tuple[str, str] | None = None, files: LocalFiles = LOCAL_FILES) -> Location:
    """Normalise a location URI.

    Args:
        default_fs: (scheme, authority) of a location given as a bare absolute path;
            None: such locations are refused (the metastore's default file system is unknown).

    Raises:
        InvalidArgumentError: empty, relative, control characters, or a form catalogd cannot compare.
    """
    if not isinstance(uri, str) or not uri:
        raise InvalidArgumentError("an empty location")
    if uri != uri.strip() or any(ord(c) < 32 or ord(c) == 127 for c in uri) or "\\" in uri:
        raise InvalidArgumentError(f"location {uri!r}: blanks at the ends, control characters or backslashes")
    colon, slash = uri.find(":"), uri.find("/")
    if colon > 0 and (slash < 0 or colon < slash):
        scheme, rest = uri[:colon], uri[colon + 1:]
        if not _SCHEME.fullmatch(scheme):
            raise InvalidArgumentError(f"location {uri!r}: {scheme!r} is not a URI scheme")
        scheme = scheme.lower()
    else:
        scheme, rest = "", uri
    authority = ""
    if rest.startswith("//"):
        end = rest.find("/", 2)
        authority, rest = (rest[2:], "/") if end < 0 else (rest[2:end], rest[end:])
    if not rest.startswith("/"):
        raise InvalidArgumentError(f"location {uri!r}: give an absolute location (scheme://authority/path)")
    if not scheme:
        if default_fs is None:
            raise InvalidArgumentError(
                f"location {uri!r}: give the full URI (scheme://authority/path); this metastore's default "
                "file system is not known to catalogd"
            )
        if authority:
            raise InvalidArgumentError(f"location {uri!r}: an authority without a scheme")
        scheme, authority = default_fs
    authority = authority.lower()
    # Hadoop's Path resolves `.` and `..` (java.net.URI.normalize) before any file system sees it.
    path = posixpath.normpath(_SLASHES.sub("/", rest))
    path = _SLASHES.sub("/", path)
    key = path
    if scheme == "file":
        if authority not in ("", "localhost"):
            raise InvalidArgumentError(f"location {uri!r}: a file: location names no host")
        authority = ""
        path = files.realpath(path)
        key = path.casefold() if files.case_insensitive(path) else path
    return Location(scheme, authority, path, key)


class Roots:
    """A catalog's allowed locations (``allowed-locations``): where its objects may live and what it may delete.

    Args:
        uris: the allowed roots as configured (or the warehouse).
        default_fs: the file system of bare paths (``file`` for an embedded metastore).

    Raises:
        InvalidArgumentError: a root is not a location.
    """

    def __init__(self, uris: Iterable[str], default_fs: tuple[str, str] | None = None,
                 files: LocalFiles = LOCAL_FILES) -> None:
        self.uris = list(uris)
        self.default_fs = default_fs
        self.files = files
        self.roots = [parse(u, default_fs, files) for u in self.uris]

    def __str__(self) -> str:
        return ", ".join(str(r) for r in self.roots) or "(none)"

    def parse(self, uri: str) -> Location:
        return parse(uri, self.default_fs, self.files)

    def root_of(self, location: Location) -> Location | None:
        """The allowed root ``location`` is strictly inside, if any."""
        for root in self.roots:
            if root.strictly_contains(location):
                return root
        return None

    def confine(self, uri: str, what: str) -> Location:
        """The location, checked to be strictly inside an allowed root.

        Raises:
            PermissionDeniedError: outside every root, or a root itself, or a spelling that cannot be checked.
        """
        try:
            location = self.parse(uri)
        except InvalidArgumentError as e:
            raise PermissionDeniedError(f"{what}: {e.message}; allowed locations: {self}") from e
        if self.root_of(location) is None:
            where = "is an allowed root itself" if any(r.same(location) for r in self.roots) else \
                "is outside the catalog's allowed locations"
            raise PermissionDeniedError(f"{what}: location {uri} ({location}) {where}; allowed locations: {self}")
        return location

    def deletable(self, uri: str | None) -> Location | None:
        """The location if catalogd may delete it as far as the roots go (strictly inside one), else None."""
        if not uri:
            return None
        try:
            location = self.parse(uri)
        except InvalidArgumentError:
            return None
        return location if self.root_of(location) is not None else None


@dataclass(frozen=True)
class Occupant:
    """An object of the catalog that has a directory: a database, a table or a partition."""

    kind: str  # "database" | "table" | "partition"
    database: str
    #: The table (of a table or partition); empty for a database.
    table: str
    #: A partition's name (``ds=1/hr=0``); empty otherwise.
    partition: str
    location: Location
    #: For a staging table (and its partitions): the table its stage writes.
    stage_of: str = ""

    def __str__(self) -> str:
        if self.kind == "database":
            return f"database {self.database}"
        if self.kind == "table":
            return f"table {self.database}.{self.table}"
        return f"partition {self.partition} of table {self.database}.{self.table}"

    @property
    def holds_data(self) -> bool:
        """Tables and partitions own what is in their directory; a database directory only holds others."""
        return self.kind != "database"


def claim_conflict(new: Location, occupants: Iterable[Occupant],
                   own_table: tuple[str, str] | None = None) -> str | None:
    """Why a new object may not take ``new`` as its directory (None: it may).

    It may not share a directory with another object, lie inside another table's or
    partition's directory (a partition: inside its own table's is fine), nor hold
    another object's directory.
    """
    for other in occupants:
        if other.location.same(new):
            return f"it is the directory of {other}"
        if other.location.strictly_contains(new) and other.holds_data \
                and (own_table is None or (other.database, other.table) != own_table):
            return f"it is inside the directory of {other}"
        if new.strictly_contains(other.location):
            return f"the directory of {other} is inside it"
    return None


def deletion_blocker(directory: Location, others: Iterable[Occupant],
                     exempt: Iterable[tuple[str, str]] = ()) -> str | None:
    """Why catalogd may not delete ``directory`` (None: it may, as far as the other objects go).

    Args:
        others: every object of the catalog except the one whose directory it is (and its partitions).
        exempt: tables whose directory it may lie inside (its own table, for a partition).
    """
    spared = set(exempt)
    for other in others:
        if directory.contains(other.location):
            return f"{other} still uses {other.location}"
        if other.location.strictly_contains(directory) and other.holds_data \
                and (other.database, other.table) not in spared:
            return f"it is inside the directory of {other}"
    return None
