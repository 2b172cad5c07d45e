"""Hive column types and schema strings: parse, validate, normalize.

Neutral ground: the daemon's catalogs validate with it, and so do the client side's
``CatalogClient`` and ``catalogd.spark`` before a request leaves the machine.

Types are kept as Hive spells them (``decimal(10,2)``, ``array<string>``,
``struct<a:int,b:string>``) because that is what HMS stores and what Spark
and Trino read back.
"""

from __future__ import annotations

import re

from catalogd.errors import InvalidArgumentError
from catalogd.model import Column

PRIMITIVES = {
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "boolean",
    "string",
    "binary",
    "date",
    "timestamp",
}
SYNONYMS = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint", "bool": "boolean",
            "real": "float", "double precision": "double", "dec": "decimal", "numeric": "decimal"}
MAX_DECIMAL_PRECISION = 38
MAX_VARCHAR_LENGTH = 65535
MAX_CHAR_LENGTH = 255

_TOKEN = re.compile(r"\s*(?:(`[^`]+`)|([A-Za-z_][A-Za-z0-9_]*(?:\s+precision)?)|(\d+)|(.))", re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _TypeParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        for m in _TOKEN.finditer(text):
            tok = m.group(1) or m.group(2) or m.group(3) or m.group(4)
            if tok and not tok.isspace():
                self.tokens.append(tok)
        self.pos = 0

    def fail(self, why: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"invalid type {self.text.strip()!r}: {why}")

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None:
            raise self.fail("unexpected end" + (f", expected {expected!r}" if expected else ""))
        if expected is not None and tok.lower() != expected:
            raise self.fail(f"expected {expected!r}, got {tok!r}")
        self.pos += 1
        return tok

    def number(self) -> int:
        tok = self.take()
        if not tok.isdigit():
            raise self.fail(f"expected a number, got {tok!r}")
        return int(tok)

    def parse(self) -> str:
        result = self.type_()
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek()!r}")
        return result

    def type_(self) -> str:
        raw = self.take()
        name = " ".join(raw.lower().split())
        name = SYNONYMS.get(name, name)
        if name in PRIMITIVES:
            return name
        if name == "decimal":
            precision, scale = 10, 0
            if self.peek() == "(":
                self.take("(")
                precision = self.number()
                if self.peek() == ",":
                    self.take(",")
                    scale = self.number()
                self.take(")")
            if not 1 <= precision <= MAX_DECIMAL_PRECISION:
                raise self.fail(f"decimal precision must be 1..{MAX_DECIMAL_PRECISION}")
            if scale > precision:
                raise self.fail("decimal scale must not exceed its precision")
            return f"decimal({precision},{scale})"
        if name in ("varchar", "char"):
            limit = MAX_VARCHAR_LENGTH if name == "varchar" else MAX_CHAR_LENGTH
            if self.peek() != "(":
                raise self.fail(f"{name} needs a length, e.g. {name}(20)")
            self.take("(")
            length = self.number()
            self.take(")")
            if not 1 <= length <= limit:
                raise self.fail(f"{name} length must be 1..{limit}")
            return f"{name}({length})"
        if name == "array":
            self.take("<")
            inner = self.type_()
            self.take(">")
            return f"array<{inner}>"
        if name == "map":
            self.take("<")
            key = self.type_()
            self.take(",")
            value = self.type_()
            self.take(">")
            return f"map<{key},{value}>"
        if name == "struct":
            self.take("<")
            fields: list[str] = []
            while True:
                fname = self.take()
                if fname.startswith("`"):
                    fname = fname[1:-1]
                elif not _IDENT.fullmatch(fname):
                    raise self.fail(f"bad struct field name {fname!r}")
                self.take(":")
                fields.append(f"{fname.lower()}:{self.type_()}")
                if self.peek() == ",":
                    self.take(",")
                    continue
                self.take(">")
                return f"struct<{','.join(fields)}>"
        if name == "uniontype":
            self.take("<")
            members = [self.type_()]
            while self.peek() == ",":
                self.take(",")
                members.append(self.type_())
            self.take(">")
            return f"uniontype<{','.join(members)}>"
        raise self.fail(f"unknown type {raw!r}")


def parse_type(text: str) -> str:
    """Validate a Hive type and return its normal spelling.

    Raises:
        InvalidArgumentError: not a Hive type.
    """
    if not text or not text.strip():
        raise InvalidArgumentError("empty column type")
    return _TypeParser(text).parse()


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """``text`` cut at each ``sep`` outside brackets and quotes (``"a int, m map<int,string>"``: two parts)."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    current: list[str] = []
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"`":
            quote = ch
        elif ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    if quote:
        raise InvalidArgumentError(f"unbalanced quote in {text!r}")
    parts.append("".join(current))
    return parts


_COLUMN = re.compile(
    r"\s*(?P<name>`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)\s+(?P<type>.+?)"
    r"(?:\s+comment\s+(?P<q>['\"])(?P<comment>(?:(?!(?P=q)).)*)(?P=q))?\s*",
    re.IGNORECASE | re.DOTALL,
)


def parse_schema(text: str) -> list[Column]:
    """Parse ``"id bigint, amount decimal(10,2) COMMENT 'in EUR'"`` into columns.

    Raises:
        InvalidArgumentError: a column without a type, a bad type, a duplicate.
    """
    if not text or not text.strip():
        raise InvalidArgumentError("empty schema: write it like \"id bigint, name string\"")
    columns: list[Column] = []
    seen: set[str] = set()
    for part in split_top_level(text):
        if not part.strip():
            raise InvalidArgumentError(f"empty column in schema {text!r}")
        m = _COLUMN.fullmatch(part)
        if not m:
            raise InvalidArgumentError(f"cannot read column {part.strip()!r}: write it as 'name type'")
        name = m.group("name").strip("`").lower()
        if name in seen:
            raise InvalidArgumentError(f"duplicate column {name!r} in schema")
        seen.add(name)
        columns.append(Column(name, parse_type(m.group("type")), m.group("comment")))
    return columns


def format_schema(columns: list[Column]) -> str:
    return ", ".join(f"{c.name} {c.type}" for c in columns)
