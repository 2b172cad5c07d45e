"""The dynamic-table statements ``catalogd sql`` runs: CREATE [OR ALTER], ALTER, DROP and
SHOW CREATE DYNAMIC TABLE, and ``show_create``, which writes a table's CREATE statement.

Only the statement header is parsed here; the query after ``AS`` is kept as the
exact text the user wrote and left to Spark. The header grammar (keywords are
case-insensitive, names have one to three dot-separated parts, parts may be
`backquoted`; ``MATERIALIZED TABLE``, Flink's name since 1.20, may stand wherever
``DYNAMIC TABLE`` does)::

    CREATE [OR ALTER] DYNAMIC TABLE [IF NOT EXISTS] <name>
        [COMMENT '<text>'] [PARTITIONED BY (<col>, ...)] [WITH ('<k>' = '<v>', ...)]
        [FRESHNESS [=] INTERVAL '<n>' SECOND|MINUTE|HOUR|DAY]
        [REFRESH_MODE [=] FULL|CONTINUOUS]
        AS <query>
    ALTER DYNAMIC TABLE <name> SUSPEND | RESUME
        | REFRESH [PARTITION (<col> = '<v>', ...)]
        | SET FRESHNESS [=] INTERVAL '<n>' <unit> | SET REFRESH_MODE [=] FULL|CONTINUOUS
        | AS <query>
    DROP DYNAMIC TABLE [IF EXISTS] <name>
    SHOW CREATE DYNAMIC TABLE <name>

The clauses before ``AS`` may come in any order. Without FRESHNESS a table gets the
configured default of its mode (FLIP-551); OR ALTER (not with IF NOT EXISTS) changes
an existing table's query as ``ALTER ... AS`` does (FLIP-492).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TypeAlias

from catalogd.dynamic.freshness import Freshness, TimeUnit, parse_freshness
from catalogd.errors import InvalidArgumentError, UnsupportedError
from catalogd.model import DynamicTable, RefreshMode
from catalogd.names import quote, split_name
from catalogd.sql_lexer import END, IDENT, STRING, VERBS, WORD, Lexer, Token, where

__all__ = [
    "NOT_DYNAMIC",
    "AlterAction",
    "AlterDynamicTable",
    "CreateDynamicTable",
    "DropDynamicTable",
    "ShowCreateDynamicTable",
    "Statement",
    "parse_statement",
    "show_create",
]

NOT_DYNAMIC = ("catalogd sql runs CREATE [OR ALTER], ALTER, DROP and SHOW CREATE DYNAMIC (or MATERIALIZED) "
               "TABLE statements; run other SQL in Spark")

#: The words that name a dynamic table in a statement: catalogd's, and Flink's since 1.20.
KINDS = ("DYNAMIC", "MATERIALIZED")


class AlterAction(enum.StrEnum):
    """What an ALTER DYNAMIC TABLE statement does."""

    SUSPEND = "SUSPEND"
    RESUME = "RESUME"
    REFRESH = "REFRESH"
    SET_FRESHNESS = "SET_FRESHNESS"
    SET_REFRESH_MODE = "SET_REFRESH_MODE"
    #: ``AS <query>``: a new query (FLIP-492).
    SET_QUERY = "SET_QUERY"


@dataclass(frozen=True)
class CreateDynamicTable:
    """``CREATE DYNAMIC TABLE``.

    ``name`` is the dotted name in lower case, backquotes removed (parts that need
    them, such as ```my table```, keep them so the name can be parsed again).
    ``query`` is the text after ``AS`` exactly as written, without a final ``;``.
    ``freshness`` and ``mode`` are None unless FRESHNESS and REFRESH_MODE were given;
    ``or_alter``: CREATE OR ALTER.
    """

    name: str
    query: str
    freshness: Freshness | None
    mode: RefreshMode | None = None
    partitioned_by: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    if_not_exists: bool = False
    or_alter: bool = False


@dataclass(frozen=True)
class AlterDynamicTable:
    """``ALTER DYNAMIC TABLE``: ``partition`` only with REFRESH, ``freshness`` and ``mode`` only with
    SET, ``query`` only with SET_QUERY (``AS <query>``, the text as written)."""

    name: str
    action: AlterAction
    partition: dict[str, str] | None = None
    freshness: Freshness | None = None
    mode: RefreshMode | None = None
    query: str | None = None


@dataclass(frozen=True)
class DropDynamicTable:
    """``DROP DYNAMIC TABLE``."""

    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class ShowCreateDynamicTable:
    """``SHOW CREATE DYNAMIC TABLE``; ``kind`` is the word used (DYNAMIC or MATERIALIZED),
    which the statement shown uses too."""

    name: str
    kind: str = "DYNAMIC"


Statement: TypeAlias = CreateDynamicTable | AlterDynamicTable | DropDynamicTable | ShowCreateDynamicTable


# ------------------------------------------------------------------------------ parser


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lexer = Lexer(text)

    # -- helpers

    def describe(self, token: Token) -> str:
        if token.kind == END:
            return "the end of the statement"
        raw = self.text[token.start : token.end]
        if len(raw) > 40:
            raw = raw[:37] + "..."
        return f"{raw!r} at {where(self.text, token.start)}"

    def error(self, expected: str, token: Token) -> InvalidArgumentError:
        return InvalidArgumentError(f"expected {expected}, found {self.describe(token)}")

    def expect_word(self, word: str, expected: str | None = None) -> Token:
        token = self.lexer.next()
        if not token.is_word(word):
            raise self.error(expected or word, token)
        return token

    def expect_punct(self, char: str, expected: str | None = None) -> Token:
        token = self.lexer.next()
        if not token.is_punct(char):
            raise self.error(expected or f"'{char}'", token)
        return token

    def accept_word(self, word: str) -> bool:
        if self.lexer.peek().is_word(word):
            self.lexer.next()
            return True
        return False

    def accept_punct(self, char: str) -> bool:
        if self.lexer.peek().is_punct(char):
            self.lexer.next()
            return True
        return False

    def expect_string(self, expected: str) -> str:
        token = self.lexer.next()
        if token.kind != STRING:
            raise self.error(expected, token)
        return token.value

    def expect_end(self) -> None:
        # One statement only: a final ';' is fine, anything after it is not.
        self.accept_punct(";")
        token = self.lexer.next()
        if token.kind != END:
            raise self.error("the end of the statement", token)

    def identifier(self, expected: str) -> str:
        token = self.lexer.next()
        if token.kind not in (WORD, IDENT):
            raise self.error(expected, token)
        return token.value.lower()

    def name(self) -> str:
        first = self.lexer.peek()
        parts = [self.identifier("a dynamic table name")]
        while self.accept_punct("."):
            parts.append(self.identifier("a name part after '.'"))
        if len(parts) > 3:
            written = self.text[first.start : self.lexer.consumed]
            raise InvalidArgumentError(
                f"expected a name of 1 to 3 parts (catalog.database.table), found {written!r} "
                f"at {where(self.text, first.start)}"
            )
        name = ".".join(quote(part) for part in parts)
        try:
            split_name(name)
        except InvalidArgumentError as err:
            raise InvalidArgumentError(f"{err.message} at {where(self.text, first.start)}") from None
        return name

    def freshness(self) -> Freshness:
        """``[=] INTERVAL '<n>' <unit>``, after FRESHNESS."""
        expected = "FRESHNESS = INTERVAL '<n>' SECOND|MINUTE|HOUR|DAY"
        self.accept_punct("=")
        self.expect_word("INTERVAL", expected)
        amount_token = self.lexer.next()
        amount = amount_token.value.strip() if amount_token.kind in (STRING, WORD) else ""
        if not (amount.isascii() and amount.isdigit()) or int(amount) <= 0:
            raise self.error("a positive whole number of units after INTERVAL, e.g. INTERVAL '1' DAY", amount_token)
        unit_token = self.lexer.next()
        try:
            unit = TimeUnit.parse(unit_token.value) if unit_token.kind == WORD else None
        except InvalidArgumentError:
            unit = None
        if unit is None:
            raise self.error(f"SECOND, MINUTE, HOUR or DAY after INTERVAL '{amount}'", unit_token)
        try:
            return Freshness(int(amount), unit)
        except InvalidArgumentError as err:
            raise InvalidArgumentError(f"{err.message} at {where(self.text, amount_token.start)}") from None

    def refresh_mode(self) -> RefreshMode:
        """``[=] FULL|CONTINUOUS``, after REFRESH_MODE."""
        self.accept_punct("=")
        token = self.lexer.next()
        if not token.is_word(*RefreshMode.__members__):
            raise self.error("FULL or CONTINUOUS after REFRESH_MODE", token)
        return RefreshMode.parse(token.value)

    # -- statements

    def query_after(self, as_token: Token) -> str:
        """The text after ``AS`` as written, without a final ``;``."""
        query = self.text[as_token.end :].strip()
        if query.endswith(";"):
            query = query[:-1].rstrip()
        if not query:
            raise InvalidArgumentError("the statement has no AS <query>: the query after AS is empty")
        return query

    def create(self, or_alter: bool = False) -> CreateDynamicTable:
        if_not_exists = False
        if self.lexer.peek().is_word("IF"):
            token = self.lexer.next()
            if or_alter:
                raise InvalidArgumentError(f"CREATE OR ALTER takes no IF NOT EXISTS (it alters a table that "
                                           f"exists) at {where(self.text, token.start)}")
            self.expect_word("NOT", "NOT EXISTS after IF")
            self.expect_word("EXISTS", "EXISTS after IF NOT")
            if_not_exists = True
        name = self.name()
        comment: str | None = None
        partitioned_by: list[str] | None = None
        options: dict[str, str] | None = None
        freshness: Freshness | None = None
        mode: RefreshMode | None = None
        seen: set[str] = set()
        while True:
            token = self.lexer.peek()
            clause = token.value.upper() if token.kind == WORD else ""
            if clause in ("COMMENT", "PARTITIONED", "WITH", "FRESHNESS", "REFRESH_MODE"):
                if clause in seen:
                    label = "PARTITIONED BY" if clause == "PARTITIONED" else clause
                    raise InvalidArgumentError(f"duplicate {label} clause at {where(self.text, token.start)}")
                seen.add(clause)
                self.lexer.next()
            if clause == "COMMENT":
                comment = self.expect_string("a quoted comment after COMMENT, e.g. COMMENT 'daily sales'")
            elif clause == "PARTITIONED":
                self.expect_word("BY", "BY after PARTITIONED")
                partitioned_by = self.column_list()
            elif clause == "WITH":
                options = self.options()
            elif clause == "FRESHNESS":
                freshness = self.freshness()
            elif clause == "REFRESH_MODE":
                mode = self.refresh_mode()
            elif token.is_word("AS"):
                return CreateDynamicTable(
                    name=name,
                    query=self.query_after(token),
                    freshness=freshness,
                    mode=mode,
                    partitioned_by=partitioned_by or [],
                    options=options or {},
                    comment=comment,
                    if_not_exists=if_not_exists,
                    or_alter=or_alter,
                )
            elif token.kind == END:
                raise InvalidArgumentError("the statement has no AS <query>")
            else:
                raise self.error("COMMENT, PARTITIONED BY, WITH, FRESHNESS, REFRESH_MODE or AS", token)

    def column_list(self) -> list[str]:
        """``(<col>, ...)`` after PARTITIONED BY."""
        self.expect_punct("(", "'(' after PARTITIONED BY")
        columns: list[str] = []
        while True:
            start = self.lexer.peek()
            column = self.identifier("a partition column name")
            if column in columns:
                raise InvalidArgumentError(
                    f"partition column {column} is listed twice at {where(self.text, start.start)}"
                )
            columns.append(column)
            if self.accept_punct(")"):
                return columns
            self.expect_punct(",", "',' or ')' in PARTITIONED BY")

    def options(self) -> dict[str, str]:
        """``('<k>' = '<v>', ...)`` after WITH."""
        self.expect_punct("(", "'(' after WITH")
        options: dict[str, str] = {}
        if self.accept_punct(")"):
            return options
        while True:
            start = self.lexer.peek()
            key = self.expect_string("a quoted option key in WITH, e.g. 'k' = 'v'")
            if key in options:
                raise InvalidArgumentError(f"option {key!r} is given twice at {where(self.text, start.start)}")
            self.expect_punct("=", f"'=' after option {key!r}")
            options[key] = self.expect_string(f"a quoted value for option {key!r}")
            if self.accept_punct(")"):
                return options
            self.expect_punct(",", "',' or ')' in WITH")

    def partition_spec(self) -> dict[str, str]:
        """``(<col> = '<v>', ...)`` after REFRESH PARTITION."""
        self.expect_punct("(", "'(' after PARTITION")
        spec: dict[str, str] = {}
        while True:
            start = self.lexer.peek()
            column = self.identifier("a partition column name")
            if column in spec:
                raise InvalidArgumentError(
                    f"partition column {column} is given twice at {where(self.text, start.start)}"
                )
            self.expect_punct("=", f"'=' after partition column {column}")
            token = self.lexer.next()
            # Unquoted numbers are common for hour partitions: hr = 10.
            if token.kind == STRING or (token.kind == WORD and token.value.isdigit()):
                spec[column] = token.value
            else:
                raise self.error(f"a quoted value for partition column {column}", token)
            if self.accept_punct(")"):
                return spec
            self.expect_punct(",", "',' or ')' in PARTITION")

    def alter(self) -> AlterDynamicTable:
        name = self.name()
        token = self.lexer.next()
        statement: AlterDynamicTable
        if token.is_word("SUSPEND", "RESUME"):
            statement = AlterDynamicTable(name, AlterAction(token.value.upper()))
        elif token.is_word("REFRESH"):
            partition = self.partition_spec() if self.accept_word("PARTITION") else None
            statement = AlterDynamicTable(name, AlterAction.REFRESH, partition=partition)
        elif token.is_word("AS"):
            # The rest is the query: nothing follows it.
            return AlterDynamicTable(name, AlterAction.SET_QUERY, query=self.query_after(token))
        elif token.is_word("SET"):
            what = self.lexer.next()
            if what.is_word("FRESHNESS"):
                statement = AlterDynamicTable(name, AlterAction.SET_FRESHNESS, freshness=self.freshness())
            elif what.is_word("REFRESH_MODE"):
                statement = AlterDynamicTable(name, AlterAction.SET_REFRESH_MODE, mode=self.refresh_mode())
            else:
                raise self.error("FRESHNESS or REFRESH_MODE after SET", what)
        else:
            raise self.error("SUSPEND, RESUME, REFRESH, SET or AS after the table name", token)
        self.expect_end()
        return statement

    def drop(self) -> DropDynamicTable:
        if_exists = False
        if self.accept_word("IF"):
            self.expect_word("EXISTS", "EXISTS after IF")
            if_exists = True
        name = self.name()
        self.expect_end()
        return DropDynamicTable(name, if_exists)

    def show_create(self, kind: str) -> ShowCreateDynamicTable:
        name = self.name()
        self.expect_end()
        return ShowCreateDynamicTable(name, kind)


def parse_statement(text: str) -> Statement:
    """Parse one CREATE [OR ALTER], ALTER, DROP or SHOW CREATE DYNAMIC TABLE statement.

    Args:
        text: The statement; SQL comments are allowed before ``AS``, one final
            ``;`` is allowed. ``MATERIALIZED`` may stand for ``DYNAMIC``.

    Returns:
        A ``CreateDynamicTable``, ``AlterDynamicTable``, ``DropDynamicTable`` or
        ``ShowCreateDynamicTable``.

    Raises:
        InvalidArgumentError: The statement is empty or malformed; the message
            says what was expected and where.
        UnsupportedError: The statement is not a dynamic-table statement (run it
            in Spark), or is CREATE OR REPLACE DYNAMIC TABLE.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"expected a SQL statement, got {type(text).__name__}")
    parser = _Parser(text)
    verb = parser.lexer.next()
    if verb.kind == END:
        raise InvalidArgumentError("empty statement: expected CREATE, ALTER, DROP or SHOW CREATE DYNAMIC TABLE")
    if not verb.is_word(*VERBS):
        raise UnsupportedError(NOT_DYNAMIC)
    keyword = verb.value.upper()
    or_alter = False
    try:
        kind = parser.lexer.next()
        if keyword == "SHOW":
            if not kind.is_word("CREATE"):
                raise UnsupportedError(NOT_DYNAMIC)
            keyword, kind = "SHOW CREATE", parser.lexer.next()
        elif keyword == "CREATE" and kind.is_word("OR"):
            how = parser.lexer.next()
            kind = parser.lexer.next()
            if how.is_word("REPLACE") and kind.is_word(*KINDS):
                raise UnsupportedError(
                    f"CREATE OR REPLACE {kind.value.upper()} TABLE is not supported: CREATE OR ALTER "
                    f"{kind.value.upper()} TABLE changes the query of a table that exists (its data and history "
                    "are kept), or DROP it and CREATE it again"
                )
            if not how.is_word("ALTER"):
                raise UnsupportedError(NOT_DYNAMIC)
            keyword, or_alter = "CREATE OR ALTER", True
        if not kind.is_word(*KINDS):
            raise UnsupportedError(NOT_DYNAMIC)
    except InvalidArgumentError:
        # Whatever follows is not lexable as our header: it is someone else's SQL.
        raise UnsupportedError(NOT_DYNAMIC) from None
    kind_word = kind.value.upper()
    parser.expect_word("TABLE", f"TABLE after {keyword} {kind_word}")
    if keyword.startswith("CREATE"):
        return parser.create(or_alter)
    if keyword == "ALTER":
        return parser.alter()
    if keyword == "SHOW CREATE":
        return parser.show_create(kind_word)
    return parser.drop()


# ------------------------------------------------------------------------------ SHOW CREATE


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def show_create(dt: DynamicTable, kind: str = "DYNAMIC") -> str:
    """The CREATE statement that makes ``dt`` again (SHOW CREATE DYNAMIC TABLE).

    The name is written whole (catalog.database.table) and the query as it was written:
    catalogd resolves a query's unqualified names in the table's own database, so the
    statement means the same table wherever it runs. REFRESH_MODE is written only when it
    was declared (a derived mode follows the freshness, and keeps doing so).
    """
    lines = [f"CREATE {kind} TABLE {'.'.join(quote(p) for p in (dt.catalog, dt.database, dt.name))}"]
    if dt.comment:
        lines.append(f"COMMENT {_string(dt.comment)}")
    if dt.partition_keys:
        lines.append(f"PARTITIONED BY ({', '.join(quote(c.name) for c in dt.partition_keys)})")
    if dt.options:
        options = ",\n".join(f"  {_string(k)} = {_string(v)}" for k, v in sorted(dt.options.items()))
        lines.append(f"WITH (\n{options}\n)")
    lines.append(f"FRESHNESS = {parse_freshness(dt.freshness).sql}")
    if dt.declared_mode is not None:
        lines.append(f"REFRESH_MODE = {dt.declared_mode.value}")
    lines.append(f"AS {dt.query}")
    return "\n".join(lines)
