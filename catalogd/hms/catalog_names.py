"""HMS 3's catalog-qualified database names on the endpoint: ``@<catalog>#<db>``, in one place.

Hive 3+ clients name a database ``@<catalog>#<db>`` (``!`` for an empty database part,
nothing after ``#`` for "no database": a listing of every database, or a pattern after it),
or send a plain name with the catalog in a struct's ``catName`` / ``catalogName`` field.
The catalog part picks a *door* into catalogd:

* ``hive`` (what every Hive 3 client sends by default) and the default catalog's own name:
  the **default door**, exactly the view a Hive 2.3 client has with plain names (the default
  catalog's databases, and the other catalogs' under their prefixes, ``scratch__tmp``);
* any other catalogd catalog: a **native door**, that catalog's databases by their own names
  (``@scratch#tmp`` is ``scratch__tmp`` to a 2.3 client);
* anything else: ``NoSuchObjectException`` naming it; an empty catalog part: ``MetaException``.

The router turns a call's names into the 2.3 spelling on the way in (``unwrap``: one call
path, one cache, one set of rules for both kinds of client) and back into the client's on
the way out (``Spelling.result`` / ``Spelling.error``): database names as the door shows
them, ``catName`` set to the catalog part the client used (lowercased, as HMS 3 does), and
error messages naming the database as the client wrote it. Nothing here does I/O.
(Waggle Dance keeps the same grammar in its ``GrammarUtils``.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from thrift.Thrift import TType

from catalogd.errors import CatalogNotFoundError, InvalidArgumentError
from catalogd.hive_idl import ttypes as hms
from catalogd.hms import methods
from catalogd.hms.errors import _declared
from catalogd.hms.federation import Federation
from catalogd.hms.refused import Refused, meta_error

__all__ = ["HIVE", "CatalogNames", "Door", "Spelling", "join", "split"]

#: The catalog part Hive 3+ clients send unless configured otherwise (``metastore.catalog.default``).
HIVE = "hive"
CAT_MARK = "@"
CAT_SEP = "#"
DB_EMPTY = "!"
#: Struct fields that carry the catalog beside a plain database name (Hive 4's IDL spells it three
#: ways: ``catName`` mostly, ``catalogName`` in Database and some requests, ``catalog`` in
#: GetTablesExtRequest and two others); only string fields count.
CATALOG_FIELDS = ("catName", "catalogName", "catalog")


def split(name: str) -> tuple[str | None, str | None]:
    """``(catalog part, database part)`` of a name, as HMS 3's ``MetaStoreUtils.parseDbName`` reads it.

    A plain name: ``(None, name)``. ``@cat#db``: ``("cat", "db")``; ``@cat#!``: ``("cat", "")``;
    ``@cat#``: ``("cat", None)`` (no database: every one, for a listing).

    Raises:
        Refused: ``@`` with no ``#`` (a MetaException, as HMS 3 answers).
    """
    if not name.startswith(CAT_MARK):
        return None, name
    catalog, sep, database = name[1:].partition(CAT_SEP)
    if not sep:
        raise meta_error(f"{name} is prepended with the catalog marker but does not appear to have a catalog "
                         "name in it")
    if database == "":
        return catalog, None
    if database == DB_EMPTY:
        return catalog, ""
    return catalog, database


def join(catalog: str, database: str | None) -> str:
    """The HMS 3 spelling of ``database`` of ``catalog`` (``split``'s inverse)."""
    if database is None:
        return f"{CAT_MARK}{catalog}{CAT_SEP}"
    return f"{CAT_MARK}{catalog}{CAT_SEP}{database or DB_EMPTY}"


@dataclass(frozen=True)
class Door:
    """What one catalog part opens onto."""

    #: The catalog part as the client wrote it, lowercased: what results carry in ``catName``.
    written: str
    #: The catalogd catalog a native door opens; None: the default door (the 2.3 view).
    catalog: str | None


class CatalogNames:
    """The grammar for one configuration.

    Args:
        federation: the endpoint's prefixes (the 2.3 view).
        catalogs: catalogd's catalog names.
    """

    def __init__(self, federation: Federation, catalogs: Collection[str]) -> None:
        self.federation = federation
        self._catalogs = {c.lower(): c for c in catalogs}

    def door(self, part: str, written: str | None = None) -> Door:
        """The door of a catalog part (``written``: the whole name, for the error).

        Raises:
            Refused: an empty part (MetaException), or one naming no catalog (NoSuchObjectException).
        """
        shown = written if written is not None else part
        lowered = part.lower()
        if not lowered.strip():
            raise meta_error(f"catalogd: {shown!r} has an empty catalog part: name a catalog, as in "
                             f"'@{HIVE}#<database>'", InvalidArgumentError)
        if lowered == HIVE or lowered == self.federation.default.lower():
            return Door(lowered, None)
        catalog = self._catalogs.get(lowered)
        if catalog is None:
            known = ", ".join(sorted([HIVE, *self._catalogs.values()]))
            raise Refused(hms.NoSuchObjectException(
                message=f"catalogd: no catalog {part!r} (in {shown!r}); the catalogs are: {known}"),
                CatalogNotFoundError(f"no catalog {part!r} (in {shown!r}); the catalogs are: {known}"))
        return Door(lowered, catalog)

    def plain(self, door: Door, database: str) -> str:
        """``database`` through ``door`` as a Hive 2.3 client names it."""
        if door.catalog is None:
            return database
        return self.federation.client_name(door.catalog, database)

    def shown(self, door: Door) -> Callable[[str], str]:
        """A 2.3 client's database name -> the name ``door`` shows (names of other catalogs stay)."""
        if door.catalog is None:
            return lambda name: name
        prefix = self.federation.prefixes.get(door.catalog, "")
        return lambda name: name[len(prefix):] if prefix and name.lower().startswith(prefix) else name

    def backing(self, plain: str) -> str | None:
        """The name a 2.3 client's database has in its own catalog (None: no catalog has it)."""
        place = self.federation.locate(plain)
        return place.database if place is not None else None

    def pattern(self, value: str) -> tuple[Door | None, str]:
        """A database pattern's door and the pattern after it (``*`` for none)."""
        part, rest = split(value)
        if part is None:
            return None, value
        return self.door(part, value), rest or "*"

    def unwrap(self, method: str, args: Any) -> Spelling | None:
        """Rewrite a call's catalog-qualified names to the 2.3 spelling, in place.

        Returns what ``Spelling`` needs to put the client's spelling back; None when the call
        names no catalog (a Hive 2.3 client's: left as it is).

        Raises:
            Refused: a bad or unknown catalog part, or one call through two doors.
        """
        spelling = Spelling(self)

        def visit(holder: Any, fields: tuple[str, ...]) -> None:
            beside = _catalog_field(holder) if fields else None
            for f in fields:
                value = getattr(holder, f, None)
                if not isinstance(value, str) or not value:
                    continue  # no database here (a global privilege object's, say)
                part, database = split(value)
                if part is None and beside is not None:
                    part = beside
                if part is None:
                    continue
                door = spelling.through(self.door(part, value))
                if database is None:
                    # "@cat#" where a database is expected: HMS 3 reads it as no database.
                    raise meta_error(f"catalogd: {value!r} names no database ({method})", InvalidArgumentError)
                plain = self.plain(door, database)
                spelling.names[plain] = value if value.startswith(CAT_MARK) else join(door.written, database)
                setattr(holder, f, plain)
            if beside is not None:
                # Behind the endpoint a metastore has its own default catalog: the door chose already.
                for attr in _catalog_fields(type(holder)):
                    setattr(holder, attr, None)

        try:
            methods.visit_args(method, args, visit)
        except Refused as refused:
            raise refused.respelt(_declared_form(method, refused.exc)) from None
        return spelling if spelling.door is not None else None


def _declared_form(method: str, exc: Exception) -> Exception:
    """An unknown catalog as ``method`` can say it: HMS 3 answers a create of an object in no
    catalog with ``InvalidObjectException``, where the method does not declare NoSuchObject."""
    if isinstance(exc, hms.NoSuchObjectException):
        declared = _declared(method)
        if hms.NoSuchObjectException not in declared and hms.InvalidObjectException in declared:
            invalid: Exception = hms.InvalidObjectException(message=exc.message)
            return invalid
    return exc


_catalog_fields_of: dict[type, tuple[str, ...]] = {}


def _catalog_fields(cls: type) -> tuple[str, ...]:
    """The string fields of a struct class that name a catalog."""
    found = _catalog_fields_of.get(cls)
    if found is None:
        strings = {s[2] for s in getattr(cls, "thrift_spec", None) or () if s is not None and s[1] == TType.STRING}
        found = _catalog_fields_of[cls] = tuple(f for f in CATALOG_FIELDS if f in strings)
    return found


def _catalog_field(struct: Any) -> str | None:
    for attr in _catalog_fields(type(struct)):
        value = getattr(struct, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass
class Spelling:
    """How one call named its databases, to answer in the same spelling."""

    grammar: CatalogNames
    door: Door | None = None
    #: 2.3 spelling -> the client's, for error messages.
    names: dict[str, str] = field(default_factory=dict)
    #: Set by a read that answered in this spelling already (cached so).
    spelt: bool = False

    def through(self, door: Door) -> Door:
        if self.door is None:
            self.door = door
        elif self.door.catalog != door.catalog:
            # ``hive`` and the default catalog's name are one door: the first spelling answers.
            raise meta_error(f"catalogd: one call names databases through two catalog parts "
                             f"({self.door.written!r} and {door.written!r})", InvalidArgumentError)
        return door

    def form(self) -> str:
        """What the answer depends on besides the 2.3 call (a cache key's part)."""
        door = self.door
        assert door is not None
        return f"{door.written}:{door.catalog or ''}:{sorted(self.names.items())!r}"

    def reply(self, method: str, result: Any) -> None:
        """A decoded ``<method>_result`` in the client's spelling: its success value and the
        message of its exception (in place)."""
        for name, value in list(vars(result).items()):
            if value is None:
                continue
            if name == "success":
                result.success = self.result(method, value)
            elif isinstance(value, Exception):
                self.error(value)

    def result(self, method: str, value: Any) -> Any:
        """A success value in the client's spelling (structs changed in place)."""
        door = self.door
        assert door is not None
        return spell_result(method, value, door, self.grammar.shown(door))

    def error(self, exc: Exception) -> Exception:
        """``exc`` with its message naming the databases as the client wrote them (in place)."""
        message = getattr(exc, "message", None)
        if not isinstance(message, str) or not self.names:
            return exc
        spelt: dict[str, str] = {}
        for plain, client in self.names.items():
            spelt.setdefault(plain.lower(), client)
            backing = self.grammar.backing(plain)
            if backing is not None:
                spelt.setdefault(backing.lower(), client)
        if any(client in message for client in spelt.values()):
            return exc
        words = sorted(spelt, key=len, reverse=True)
        # A database name as a word (not inside another name, nor a table's name after a '.').
        pattern = re.compile(r"(?<![\w@#.!$])(" + "|".join(re.escape(w) for w in words) + r")(?!\w)", re.IGNORECASE)
        exc.message = pattern.sub(lambda m: spelt[m.group(1).lower()], message)  # type: ignore[attr-defined]
        return exc


def spell_result(method: str, value: Any, door: Door, shown: Callable[[str], str]) -> Any:
    """``value`` (a call's success value) with database names as ``door`` shows them and the
    catalog fields set to the catalog part the client used."""
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value) and method in methods.DB_LIST_RESULTS:
        return [shown(v) for v in value]

    def visit(struct: Any, fields: tuple[str, ...]) -> None:
        if not fields:
            return
        for f in fields:
            v = getattr(struct, f, None)
            if isinstance(v, str):
                setattr(struct, f, shown(v))
        for attr in _catalog_fields(type(struct)):
            setattr(struct, attr, door.written)

    return methods.visit_result(method, value, visit)
