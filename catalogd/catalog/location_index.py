"""The directories of a catalog's objects, indexed by location: which objects lie in or around a path.

A claim (may a new object take this directory?) and a deletion (may this directory go?)
only care about the objects whose directories lie inside the one judged or contain it.
Kept sorted by normalised location, those are found in O(log n + k): the ones containing
it by looking up each of its ancestors, the ones inside it as one range of the sorted
keys (every key that starts with ``path + "/"``).

Entries are kept per (database, table) -- table ``""`` for the database itself -- so that
one write replaces what it changed, and nothing else. No I/O here: the hive session
(``hive_client``) fills it from the metastore and says which entries are current.
"""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Iterable

from catalogd.catalog.locations import Location, Occupant

__all__ = ["LocationIndex"]

Key = tuple[str, str]


def _fs(location: Location) -> str:
    return f"{location.scheme}://{location.authority}"


def _sort_key(location: Location) -> str:
    """The file system and the compared path, as one string: a directory's descendants
    sort right after ``key + "/"``."""
    return _fs(location) + location.key


class LocationIndex:
    """(database, table) -> the occupants it holds, searchable by location. Not thread-safe:
    the session holds its own lock around every call."""

    def __init__(self) -> None:
        self._entries: dict[Key, list[Occupant]] = {}
        #: sort key -> occupants at exactly that directory.
        self._at: dict[str, list[Occupant]] = {}
        #: The keys of ``_at``, sorted.
        self._sorted: list[str] = []
        #: (database, target) -> the staging tables whose stages write it.
        self._stages: dict[Key, set[Key]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def objects(self) -> list[Key]:
        return list(self._entries)

    def items(self) -> list[tuple[Key, list[Occupant]]]:
        return [(k, list(v)) for k, v in self._entries.items()]

    def tables_of(self, database: str) -> list[str]:
        """The tables of ``database`` that have an entry."""
        return [t for d, t in self._entries if d == database and t]

    def get(self, key: Key) -> list[Occupant] | None:
        return self._entries.get(key)

    def put(self, key: Key, occupants: list[Occupant]) -> None:
        """What (database, table) holds now (replacing what it held)."""
        self.remove(key)
        self._entries[key] = list(occupants)
        for occupant in occupants:
            if occupant.stage_of:
                self._stages.setdefault((key[0], occupant.stage_of.lower()), set()).add(key)
            sort_key = _sort_key(occupant.location)
            at = self._at.get(sort_key)
            if at is None:
                self._at[sort_key] = [occupant]
                bisect.insort(self._sorted, sort_key)
            else:
                at.append(occupant)

    def remove(self, key: Key) -> None:
        for occupant in self._entries.pop(key, []):
            stages = self._stages.get((key[0], occupant.stage_of.lower()))
            if stages is not None:
                stages.discard(key)
                if not stages:
                    del self._stages[(key[0], occupant.stage_of.lower())]
            sort_key = _sort_key(occupant.location)
            at = self._at.get(sort_key, [])
            if occupant in at:
                at.remove(occupant)
            if not at and sort_key in self._at:
                del self._at[sort_key]
                i = bisect.bisect_left(self._sorted, sort_key)
                if i < len(self._sorted) and self._sorted[i] == sort_key:
                    del self._sorted[i]

    def has_stages_of(self, database: str, table: str) -> bool:
        """Whether a staging table (with a directory) writes ``database.table``."""
        return bool(self._stages.get((database, table.lower())))

    def remove_database(self, database: str) -> None:
        """The database and every table of it."""
        for key in [k for k in self._entries if k[0] == database]:
            self.remove(key)

    def around(self, location: Location) -> list[Occupant]:
        """Every occupant whose directory is ``location``, lies inside it, or contains it."""
        fs = _fs(location)
        found: list[Occupant] = []
        # Containing (or the same): each ancestor, the directory itself included.
        path = location.key
        while True:
            found.extend(self._at.get(fs + path, ()))
            parent = posixpath.dirname(path)
            if parent == path:
                break
            path = parent
        # Inside: the sorted range of keys that start with "<key>/"; '0' follows '/'.
        prefix = fs + (location.key if location.key.endswith("/") else location.key + "/")
        start = bisect.bisect_left(self._sorted, prefix)
        end = bisect.bisect_left(self._sorted, prefix[:-1] + "0")
        for sort_key in self._sorted[start:end]:
            if sort_key != fs + location.key:  # the root itself: found above
                found.extend(self._at[sort_key])
        return found

    def all(self) -> list[Occupant]:
        return [o for occupants in self._entries.values() for o in occupants]

    def replace_all(self, entries: Iterable[tuple[Key, list[Occupant]]]) -> None:
        self._entries.clear()
        self._stages.clear()
        self._at.clear()
        self._sorted.clear()
        for key, occupants in entries:
            self.put(key, occupants)
