"""The dynamic-table statements ``catalogd sql`` runs: CREATE, ALTER and DROP DYNAMIC TABLE.

Only the statement header is parsed here; the query after ``AS`` is kept as the
exact text the user wrote and left to Spark. The header grammar (keywords are
case-insensitive, names have one to three dot-separated parts, parts may be
`backquoted`)::

    CREATE DYNAMIC TABLE [IF NOT EXISTS] <name>
        [COMMENT '<text>'] [PARTITIONED BY (<col>, ...)] [WITH ('<k>' = '<v>', ...)]
        FRESHNESS [=] INTERVAL '<n>' SECOND|MINUTE|HOUR|DAY
        [REFRESH_MODE [=] FULL|CONTINUOUS]
        AS <query>
    ALTER DYNAMIC TABLE <name> SUSPEND | RESUME
        | REFRESH [PARTITION (<col> = '<v>', ...)]
        | SET FRESHNESS [=] INTERVAL '<n>' <unit> | SET REFRESH_MODE [=] FULL|CONTINUOUS
    DROP DYNAMIC TABLE [IF EXISTS] <name>

The clauses before ``AS`` may come in any order.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TypeAlias

from catalogd.dynamic.freshness import Freshness, TimeUnit
from catalogd.errors import InvalidArgumentError, UnsupportedError
from catalogd.model import RefreshMode
from catalogd.names import quote, split_name
from catalogd.sql_lexer import END, IDENT, STRING, VERBS, WORD, Lexer, Token, where

__all__ = [
    "NOT_DYNAMIC",
    "AlterAction",
    "AlterDynamicTable",
    "CreateDynamicTable",
    "DropDynamicTable",
    "Statement",
    "parse_statement",
]

NOT_DYNAMIC = "catalogd sql runs CREATE, ALTER and DROP DYNAMIC TABLE statements; run other SQL in Spark"


class AlterAction(enum.StrEnum):
    """What an ALTER DYNAMIC TABLE statement does."""

    SUSPEND = "SUSPEND"
    RESUME = "RESUME"
    REFRESH = "REFRESH"
    SET_FRESHNESS = "SET_FRESHNESS"
    SET_REFRESH_MODE = "SET_REFRESH_MODE"


@dataclass(frozen=True)
class CreateDynamicTable:
    """``CREATE DYNAMIC TABLE``.

    ``name`` is the dotted name in lower case, backquotes removed (parts that need
    them, such as ```my table```, keep them so the name can be parsed again).
    ``query`` is the text after ``AS`` exactly as written, without a final ``;``.
    ``mode`` is None unless REFRESH_MODE was given.
    """

    name: str
    query: str
    freshness: Freshness
    mode: RefreshMode | None = None
    partitioned_by: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterDynamicTable:
    """``ALTER DYNAMIC TABLE``: ``partition`` only with REFRESH, ``freshness`` and ``mode`` only with SET."""

    name: str
    action: AlterAction
    partition: dict[str, str] | None = None
    freshness: Freshness | None = None
    mode: RefreshMode | None = None


@dataclass(frozen=True)
class DropDynamicTable:
    """``DROP DYNAMIC TABLE``."""

    name: str
    if_exists: bool = False


Statement: TypeAlias = CreateDynamicTable | AlterDynamicTable | DropDynamicTable


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

    def create(self) -> CreateDynamicTable:
        if_not_exists = False
        if self.accept_word("IF"):
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
                if freshness is None:
                    raise self.error("FRESHNESS = INTERVAL '<n>' <unit> before AS", token)
                query = self.text[token.end :].strip()
                if query.endswith(";"):
                    query = query[:-1].rstrip()
                if not query:
                    raise InvalidArgumentError("the statement has no AS <query>: the query after AS is empty")
                return CreateDynamicTable(
                    name=name,
                    query=query,
                    freshness=freshness,
                    mode=mode,
                    partitioned_by=partitioned_by or [],
                    options=options or {},
                    comment=comment,
                    if_not_exists=if_not_exists,
                )
            elif token.kind == END:
                if freshness is None:
                    raise InvalidArgumentError(
                        "the statement has no AS <query> (and needs FRESHNESS = INTERVAL '<n>' <unit> before it)"
                    )
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
        elif token.is_word("SET"):
            what = self.lexer.next()
            if what.is_word("FRESHNESS"):
                statement = AlterDynamicTable(name, AlterAction.SET_FRESHNESS, freshness=self.freshness())
            elif what.is_word("REFRESH_MODE"):
                statement = AlterDynamicTable(name, AlterAction.SET_REFRESH_MODE, mode=self.refresh_mode())
            else:
                raise self.error("FRESHNESS or REFRESH_MODE after SET", what)
        else:
            raise self.error("SUSPEND, RESUME, REFRESH or SET after the table name", token)
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


def parse_statement(text: str) -> Statement:
    """Parse one CREATE, ALTER or DROP DYNAMIC TABLE statement.

    Args:
        text: The statement; SQL comments are allowed before ``AS``, one final
            ``;`` is allowed.

    Returns:
        A ``CreateDynamicTable``, ``AlterDynamicTable`` or ``DropDynamicTable``.

    Raises:
        InvalidArgumentError: The statement is empty or malformed; the message
            says what was expected and where.
        UnsupportedError: The statement is not a dynamic-table statement (run it
            in Spark).
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"expected a SQL statement, got {type(text).__name__}")
    parser = _Parser(text)
    verb = parser.lexer.next()
    if verb.kind == END:
        raise InvalidArgumentError("empty statement: expected CREATE, ALTER or DROP DYNAMIC TABLE")
    if not verb.is_word(*VERBS):
        raise UnsupportedError(NOT_DYNAMIC)
    try:
        second = parser.lexer.next()
        if not second.is_word("DYNAMIC"):
            if verb.is_word("CREATE") and second.is_word("OR"):
                replace, dynamic = parser.lexer.next(), parser.lexer.next()
                if replace.is_word("REPLACE") and dynamic.is_word("DYNAMIC"):
                    raise UnsupportedError(
                        "CREATE OR REPLACE DYNAMIC TABLE is not supported: "
                        "DROP DYNAMIC TABLE and CREATE DYNAMIC TABLE instead"
                    )
            raise UnsupportedError(NOT_DYNAMIC)
    except InvalidArgumentError:
        # Whatever follows is not lexable as our header: it is someone else's SQL.
        raise UnsupportedError(NOT_DYNAMIC) from None
    keyword = verb.value.upper()
    parser.expect_word("TABLE", f"TABLE after {keyword} DYNAMIC")
    if keyword == "CREATE":
        return parser.create()
    if keyword == "ALTER":
        return parser.alter()
    return parser.drop()
