"""The lexer of catalogd's dynamic-table statements, and ``is_dynamic_statement`` on top of it.

The grammar (CREATE, ALTER, DROP and SHOW CREATE DYNAMIC TABLE) is parsed by the daemon, in
``catalogd.dynamic.statements``; telling whether a statement is one of them is needed on
the client side too (``catalogd.spark.sql`` sends those to the daemon and runs the rest in
Spark), so the lexer lives here, outside the daemon's packages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from catalogd.errors import InvalidArgumentError

#: The verbs a dynamic-table statement starts with.
VERBS = ("CREATE", "ALTER", "DROP", "SHOW")
#: The words before TABLE that make a statement a dynamic-table one (MATERIALIZED: Flink's).
_KINDS = ("DYNAMIC", "MATERIALIZED")

#: Token kinds.
WORD, STRING, IDENT, PUNCT, END = "word", "string", "identifier", "punctuation", "end"
_WORD_RE = re.compile(r"[A-Za-z0-9_]+")
_PUNCTUATION = "(),=.;"


@dataclass(frozen=True)
class Token:
    """One token: its kind, its value and where it is in the text (``start`` to ``end``)."""

    kind: str
    #: Words as written, strings and identifiers unquoted, punctuation itself.
    value: str
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        return self.kind == WORD and self.value.upper() in words

    def is_punct(self, char: str) -> bool:
        return self.kind == PUNCT and self.value == char


def where(text: str, pos: int) -> str:
    """``line L, column C`` of ``pos`` in ``text``, for error messages."""
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, column {column}"


class Lexer:
    """Hands out tokens one at a time, so that the query after AS is never lexed."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        #: Where the last token handed out ends.
        self.consumed = 0
        self._peeked: Token | None = None

    def peek(self) -> Token:
        if self._peeked is None:
            self._peeked = self._scan()
        return self._peeked

    def next(self) -> Token:
        token = self.peek()
        self._peeked = None
        self.consumed = token.end
        return token

    def _error(self, message: str, pos: int) -> InvalidArgumentError:
        return InvalidArgumentError(f"{message} at {where(self.text, pos)}")

    def _quoted(self, start: int, quote_char: str) -> tuple[str, int]:
        """The text between quotes starting at ``start`` (a doubled quote is one) and the end."""
        text, chars = self.text, []
        i = start + 1
        while True:
            end = text.find(quote_char, i)
            if end < 0:
                what = "string" if quote_char == "'" else "quoted identifier"
                raise self._error(f"unterminated {what} starting with {text[start : start + 20]!r}", start)
            chars.append(text[i:end])
            if text.startswith(quote_char * 2, end):
                chars.append(quote_char)
                i = end + 2
                continue
            return "".join(chars), end + 1

    def _scan(self) -> Token:
        text, n, i = self.text, len(self.text), self.pos
        while i < n:
            if text[i].isspace():
                i += 1
            elif text.startswith("--", i):
                newline = text.find("\n", i)
                i = n if newline < 0 else newline + 1
            elif text.startswith("/*", i):
                close = text.find("*/", i + 2)
                if close < 0:
                    raise self._error("unterminated /* comment", i)
                i = close + 2
            else:
                break
        if i >= n:
            self.pos = n
            return Token(END, "", n, n)
        ch = text[i]
        if ch == "'":
            value, end = self._quoted(i, "'")
            token = Token(STRING, value, i, end)
        elif ch == "`":
            value, end = self._quoted(i, "`")
            if not value:
                raise self._error("empty quoted identifier ``", i)
            token = Token(IDENT, value, i, end)
        elif ch in _PUNCTUATION:
            token = Token(PUNCT, ch, i, i + 1)
        elif match := _WORD_RE.match(text, i):
            token = Token(WORD, match.group(), i, match.end())
        else:
            hint = " (strings take single quotes)" if ch == '"' else ""
            raise self._error(f"unexpected character {ch!r}{hint}", i)
        self.pos = token.end
        return token


def is_dynamic_statement(text: str) -> bool:
    """Whether a statement is one ``catalogd sql`` runs itself.

    Args:
        text: A SQL statement.

    Returns:
        True when it starts, after whitespace and SQL comments, with ``CREATE``,
        ``CREATE OR ALTER``, ``CREATE OR REPLACE``, ``ALTER``, ``DROP`` or ``SHOW CREATE``
        followed by ``DYNAMIC TABLE`` or ``MATERIALIZED TABLE``.
    """
    if not isinstance(text, str):
        return False
    lexer = Lexer(text)
    try:
        verb = lexer.next()
        if not verb.is_word(*VERBS):
            return False
        kind = lexer.next()
        if verb.is_word("SHOW"):
            if not kind.is_word("CREATE"):
                return False
            kind = lexer.next()
        elif verb.is_word("CREATE") and kind.is_word("OR"):
            if not lexer.next().is_word("ALTER", "REPLACE"):
                return False
            kind = lexer.next()
        return kind.is_word(*_KINDS) and lexer.next().is_word("TABLE")
    except InvalidArgumentError:
        return False
