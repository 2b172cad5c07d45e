"""HMS partition filter strings (Hive's ``Filter.g`` grammar): parse once, evaluate per partition."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FilterError", "PartitionFilter", "parse_filter"]

_INTEGRAL = ("tinyint", "smallint", "int", "integer", "bigint")


class FilterError(ValueError):
    """A filter string outside the grammar, or naming a column that is no partition key."""


@dataclass(frozen=True)
class _Token:
    kind: str  # ident, string, int, op, lparen, rparen, comma, kw
    text: str


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<op><>|!=|<=|>=|=|<|>)
      | (?P<lparen>\()
      | (?P<rparen>\))
      | (?P<comma>,)
      | (?P<int>-?[0-9]+(?![A-Za-z_0-9]))
      | (?P<ident>[A-Za-z0-9_]+)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "like", "in", "between", "date"}


def _unquote(text: str) -> str:
    # Hive's unescapeSQLString, for the escapes a filter string carries.
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _tokens(text: str) -> list[_Token]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise FilterError(f"cannot parse the filter at {text[pos:pos + 20]!r}")
        pos = m.end()
        kind = m.lastgroup
        assert kind is not None
        value = m.group(kind)
        if kind == "ident" and value.lower() in _KEYWORDS:
            tokens.append(_Token("kw", value.lower()))
        else:
            tokens.append(_Token(kind, value))
    return tokens


#: A literal: its text, and whether it was an unquoted integer.
@dataclass(frozen=True)
class _Literal:
    text: str
    integral: bool


Predicate = Callable[[dict[str, str]], bool]


class _Parser:
    def __init__(self, tokens: list[_Token], key_types: dict[str, str]) -> None:
        self.tokens, self.pos, self.key_types = tokens, 0, key_types

    def peek(self, offset: int = 0) -> _Token | None:
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else None

    def take(self, kind: str, text: str | None = None) -> _Token:
        tok = self.peek()
        if tok is None or tok.kind != kind or (text is not None and tok.text != text):
            found = "the end" if tok is None else repr(tok.text)
            raise FilterError(f"expected {text or kind}, found {found}")
        self.pos += 1
        return tok

    def at(self, kind: str, text: str | None = None, offset: int = 0) -> bool:
        tok = self.peek(offset)
        return tok is not None and tok.kind == kind and (text is None or tok.text == text)

    def parse(self) -> Predicate:
        if not self.tokens:
            return lambda values: True
        pred = self.or_expr()
        if self.peek() is not None:
            raise FilterError(f"unexpected {self.peek().text!r} in the filter")  # type: ignore[union-attr]
        return pred

    def or_expr(self) -> Predicate:
        parts = [self.and_expr()]
        while self.at("kw", "or"):
            self.pos += 1
            parts.append(self.and_expr())
        return parts[0] if len(parts) == 1 else (lambda v: any(p(v) for p in parts))

    def and_expr(self) -> Predicate:
        parts = [self.expr()]
        while self.at("kw", "and"):
            self.pos += 1
            parts.append(self.expr())
        return parts[0] if len(parts) == 1 else (lambda v: all(p(v) for p in parts))

    def expr(self) -> Predicate:
        if self.at("lparen") and self.at("ident", offset=1) and (self.at("comma", offset=2) or (
                self.at("rparen", offset=2) and (self.at("kw", "in", offset=3) or self.at("kw", "not", offset=3)))):
            return self.in_keys()
        if self.at("lparen"):
            self.pos += 1
            pred = self.or_expr()
            self.take("rparen")
            return pred
        return self.operator_expr()

    def in_keys(self) -> Predicate:
        """HMS's IN forms: ``(k) IN (v, ...)`` and ``(k1, k2) IN (struct(v1, v2), ...)``."""
        self.take("lparen")
        keys = [self.key()]
        while self.at("comma"):
            self.pos += 1
            keys.append(self.key())
        self.take("rparen")
        negated = self.at("kw", "not")
        if negated:
            self.pos += 1
        self.take("kw", "in")
        self.take("lparen")
        rows = [self.in_row(keys)]
        while self.at("comma"):
            self.pos += 1
            rows.append(self.in_row(keys))
        self.take("rparen")
        return lambda v: any(all(p(v) for p in row) for row in rows) != negated

    def in_row(self, keys: list[str]) -> list[Predicate]:
        if len(keys) == 1:
            return [self.compare(keys[0], "=", self.literal())]
        tok = self.take("ident")
        if tok.text.lower() != "struct":
            raise FilterError(f"expected struct(...), found {tok.text!r}")
        self.take("lparen")
        row = [self.compare(keys[0], "=", self.literal())]
        for key in keys[1:]:
            self.take("comma")
            row.append(self.compare(key, "=", self.literal()))
        self.take("rparen")
        return row

    def literal(self) -> _Literal:
        tok = self.peek()
        if tok is not None and tok.kind == "kw" and tok.text == "date":
            self.pos += 1
            return _Literal(_unquote(self.take("string").text), False)
        if tok is not None and tok.kind == "string":
            self.pos += 1
            return _Literal(_unquote(tok.text), False)
        if tok is not None and tok.kind == "int":
            self.pos += 1
            return _Literal(tok.text, True)
        raise FilterError(f"expected a value, found {'the end' if tok is None else repr(tok.text)}")

    def key(self) -> str:
        name = self.take("ident").text.lower()
        if name not in self.key_types:
            raise FilterError(f"{name} is not a partitioning key of the table")
        return name

    def operator_expr(self) -> Predicate:
        if self.at("ident"):
            key = self.key()
            negated = False
            if self.at("kw", "not"):
                self.pos += 1
                negated = True
            if self.at("kw", "between"):
                self.pos += 1
                low = self.literal()
                self.take("kw", "and")
                high = self.literal()
                ge, le = self.compare(key, ">=", low), self.compare(key, "<=", high)
                return lambda v: (ge(v) and le(v)) != negated
            if self.at("kw", "in"):
                self.pos += 1
                self.take("lparen")
                options = [self.compare(key, "=", self.literal())]
                while self.at("comma"):
                    self.pos += 1
                    options.append(self.compare(key, "=", self.literal()))
                self.take("rparen")
                return lambda v: any(o(v) for o in options) != negated
            if negated:
                raise FilterError("NOT goes with IN or BETWEEN only")
            op = self.operator()
            return self.compare(key, op, self.literal())
        # value op key
        value = self.literal()
        op = self.operator()
        key = self.key()
        flipped = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
        if op == "like":
            raise FilterError("LIKE needs the key on its left")
        return self.compare(key, flipped, value)

    def operator(self) -> str:
        if self.at("kw", "like"):
            self.pos += 1
            return "like"
        return self.take("op").text

    def compare(self, key: str, op: str, literal: _Literal) -> Predicate:
        numeric = literal.integral and self.key_types[key].lower() in _INTEGRAL
        if op == "like":
            # As HMS's JDO filter: the value is a Java regular expression matched whole.
            try:
                pattern = re.compile(literal.text)
            except re.error as e:
                raise FilterError(f"LIKE {literal.text!r}: {e}") from e
            return lambda v: pattern.fullmatch(v[key]) is not None
        target: int | str = int(literal.text) if numeric else literal.text

        def test(values: dict[str, str]) -> bool:
            raw = values[key]
            current: int | str
            if numeric:
                try:
                    current = int(raw)
                except ValueError:
                    return False  # e.g. __HIVE_DEFAULT_PARTITION__: no integer compares to it
            else:
                current = raw
            return _OPS[op](current, target)

        return test


_OPS: dict[str, Callable[[object, object], bool]] = {
    "=": lambda a, b: a == b,
    "<>": lambda a, b: a != b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,  # type: ignore[operator]
    "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b,  # type: ignore[operator]
    ">=": lambda a, b: a >= b,  # type: ignore[operator]
}


class PartitionFilter:
    """A parsed filter over a table's partition keys (``{name: hive type}``, in order)."""

    def __init__(self, text: str, key_types: dict[str, str]) -> None:
        self.text = text
        self._keys = [k.lower() for k in key_types]
        self._pred = _Parser(_tokens(text or ""), {k.lower(): t for k, t in key_types.items()}).parse()

    def matches(self, values: list[str]) -> bool:
        return self._pred(dict(zip(self._keys, values, strict=True)))


def parse_filter(text: str, key_types: dict[str, str]) -> PartitionFilter:
    return PartitionFilter(text, key_types)
