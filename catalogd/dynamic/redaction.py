"""A refresh job's error as users are shown it (history, ``dt refresh --wait``, REST): what went
wrong, never the data it went wrong on.

Spark's messages quote the values they fail on (``[CAST_INVALID_INPUT] The value 'hunter2' of
the type "STRING" cannot be cast to "INT"``): a query that fails on purpose would read any file
its job can read into the run's error. The rule, applied to every text that comes from a job
(its result's error, its log's tail, a Connect session's exception) and never to catalogd's own
messages:

- the first line only (a Spark message's plan, stack or "Caused by" lines stay in the job's log
  in the data dir, readable by catalogd's user only), at most ``MAX_SHOWN`` characters;
- the exception's kind and Spark's error class (``[CAST_INVALID_INPUT]``) are kept, and so is
  the wording around the values, and identifiers in backticks (Spark quotes names so);
- every single- or double-quoted span becomes ``'…'`` (``"…"``), but for Spark's type names
  (``"STRING"``, ``"DECIMAL(10,2)"``); every bracketed span after the error class becomes
  ``[…]`` (Spark lists rows and records in brackets).

What is withheld is in the job's log (``<data-dir>/dynamic/runs/<run id>/job.log``).
"""

from __future__ import annotations

import re

__all__ = ["MAX_SHOWN", "shown_error"]

#: Characters of a job's error shown at most.
MAX_SHOWN = 500
_ERROR_CLASS = re.compile(r"^(?P<head>[^\[\n]*?)(?P<cls>\[[A-Z][A-Z0-9_.]*\])")
#: Spark's type names as its messages quote them: the only double-quoted spans kept (a value is
#: never one of these words, or if it is, it tells nothing).
_TYPE_NAME = re.compile(r'"(STRING|INT|INTEGER|BIGINT|SMALLINT|TINYINT|DOUBLE|FLOAT|REAL|BOOLEAN|DATE|TIMESTAMP'
                        r'|TIMESTAMP_NTZ|TIMESTAMP_LTZ|BINARY|VOID|VARIANT|DECIMAL(\(\d+, ?\d+\))?'
                        r'|CHAR\(\d+\)|VARCHAR\(\d+\))"')
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?")
_BRACKETED = re.compile(r"\[[^\]]*\]?")


def _redact_quotes(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        span = match.group(0)
        if _TYPE_NAME.fullmatch(span):
            return span
        return "'…'" if span.startswith("'") else '"…"'

    return _QUOTED.sub(one, text)


def shown_error(text: str | None, first_line: bool = True) -> str:
    """``text`` (a job's error) as shown to users: see the module's rule.

    Args:
        first_line: keep the first line only (False: a log tail whose lines are joined already).
    """
    if not text:
        return ""
    if first_line:
        text = text.strip().splitlines()[0] if text.strip() else ""
    head, rest = "", text
    found = _ERROR_CLASS.match(text)
    if found is not None:
        head, rest = text[:found.end()], text[found.end():]
        head = _redact_quotes(found.group("head")) + found.group("cls")
    else:
        rest = text
    rest = _BRACKETED.sub("[…]", _redact_quotes(rest))
    shown = head + rest
    return shown if len(shown) <= MAX_SHOWN else shown[:MAX_SHOWN - 1] + "…"
