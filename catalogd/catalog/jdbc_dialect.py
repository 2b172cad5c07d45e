"""What differs between the databases a jdbc catalog can sit on: quoting, types, catalog queries.

PostgreSQL is the one dialect (``PostgresDialect``). Another one (MySQL, say) would be a
subclass answering the same questions; ``dialect_for`` refuses any name it does not know, so
no configuration half works on a database catalogd has never been tested against.

Types go both ways between catalogd's column types (Hive/Spark spellings, ``hive_types``) and
the database's. A type with no faithful counterpart is refused with the one to use instead,
never silently narrowed.
"""

from __future__ import annotations

import re

from catalogd.errors import InvalidArgumentError
from catalogd.hive_types import parse_type

__all__ = ["Dialect", "PostgresDialect", "dialect_for"]


class Dialect:
    """The questions a jdbc catalog asks of its database's dialect."""

    name = ""
    #: The longest identifier the database keeps (longer ones are cut, which would alias names).
    max_identifier = 63

    def quote(self, name: str) -> str:
        raise NotImplementedError

    def to_db_type(self, catalogd_type: str, column: str) -> str:
        raise NotImplementedError

    def from_db_type(self, db_type: str) -> str:
        raise NotImplementedError


_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
_SIZED = re.compile(r"(varchar|char)\((\d+)\)")
_PG_NUMERIC = re.compile(r"numeric\((\d+),(\d+)\)")
_PG_NUMERIC_P = re.compile(r"numeric\((\d+)\)")
_PG_VARCHAR = re.compile(r"character varying\((\d+)\)")
_PG_CHAR = re.compile(r"character\((\d+)\)")


class PostgresDialect(Dialect):
    """PostgreSQL 12 and later (what Debian ships; tested against the suite's server)."""

    name = "postgresql"

    #: catalogd type -> PostgreSQL type, for the types that map one to one (or widen: tinyint).
    TO_PG = {
        "boolean": "boolean",
        "tinyint": "smallint",  # PostgreSQL has no 1-byte integer; read back as smallint
        "smallint": "smallint",
        "int": "integer",
        "bigint": "bigint",
        "float": "real",
        "double": "double precision",
        "string": "text",
        "binary": "bytea",
        "date": "date",
        "timestamp": "timestamp without time zone",
    }
    #: PostgreSQL type (as ``format_type`` spells it) -> catalogd type.
    FROM_PG = {
        "boolean": "boolean",
        "smallint": "smallint",
        "integer": "int",
        "bigint": "bigint",
        "real": "float",
        "double precision": "double",
        "text": "string",
        "bytea": "binary",
        "date": "date",
        "timestamp without time zone": "timestamp",
        "timestamp with time zone": "timestamp",
        # Read as text by Spark's JDBC source as well.
        "character varying": "string",
        "json": "string",
        "jsonb": "string",
        "uuid": "string",
        "numeric": "decimal(38,18)",  # unbounded numeric: Spark's reading of it too
    }

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def to_db_type(self, catalogd_type: str, column: str) -> str:
        """The PostgreSQL type for a column of ``catalogd_type``.

        Raises:
            InvalidArgumentError: a type PostgreSQL cannot hold as such (map, struct, nested arrays).
        """
        t = parse_type(catalogd_type)
        if t in self.TO_PG:
            return self.TO_PG[t]
        m = _DECIMAL.fullmatch(t)
        if m:
            return f"numeric({m.group(1)},{m.group(2)})"
        m = _SIZED.fullmatch(t)
        if m:
            return f"{'character varying' if m.group(1) == 'varchar' else 'character'}({m.group(2)})"
        if t.startswith("array<") and t.endswith(">"):
            element = t[len("array<"):-1]
            if element.startswith(("array<", "map<", "struct<")):
                raise InvalidArgumentError(f"column {column!r}: {t}: PostgreSQL arrays hold scalar elements only")
            return self.to_db_type(element, column) + "[]"
        raise InvalidArgumentError(f"column {column!r}: PostgreSQL has no {t.split('<')[0]} type; "
                                   "store it as a string (e.g. to_json(...)) instead")

    def from_db_type(self, db_type: str) -> str:
        """catalogd's type for a PostgreSQL column (``format_type`` spelling); other types read as string."""
        t = db_type.strip().lower()
        if t.endswith("[]"):
            return f"array<{self.from_db_type(t[:-2])}>"
        if t in self.FROM_PG:
            return self.FROM_PG[t]
        m = _PG_NUMERIC.fullmatch(t)
        if m:
            return f"decimal({min(int(m.group(1)), 38)},{m.group(2)})"
        m = _PG_NUMERIC_P.fullmatch(t)
        if m:
            return f"decimal({min(int(m.group(1)), 38)},0)"
        m = _PG_VARCHAR.fullmatch(t)
        if m:
            return f"varchar({m.group(1)})" if int(m.group(1)) <= 65535 else "string"
        m = _PG_CHAR.fullmatch(t)
        if m:
            return f"char({m.group(1)})" if int(m.group(1)) <= 255 else "string"
        if t.startswith("timestamp"):
            return "timestamp"
        # time, interval, inet, enums, ...: Spark's JDBC source reads them as strings.
        return "string"


_DIALECTS: dict[str, type[Dialect]] = {"postgresql": PostgresDialect}


def dialect_for(name: str) -> Dialect:
    """The dialect of a ``base-url``'s sub-protocol.

    Raises:
        InvalidArgumentError: one catalogd does not speak.
    """
    try:
        return _DIALECTS[name]()
    except KeyError:
        raise InvalidArgumentError(f"unsupported JDBC dialect {name!r}: catalogd speaks "
                                   f"{', '.join(sorted(_DIALECTS))}") from None
