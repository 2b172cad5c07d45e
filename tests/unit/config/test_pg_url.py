"""The URL parts base-url and metastore-db read alike (catalogd.config.pg_url)."""

from __future__ import annotations

import pytest

from catalogd.config.pg_url import split_url, url_host, url_params

EXPECTED = "expected X"


def test_split_and_params() -> None:
    split, port = split_url("postgresql://u:secret@h:6543/db?sslmode=require&x=", "malformed URL", EXPECTED)
    assert (split.hostname, port) == ("h", 6543)
    assert url_params(split, "malformed URL", EXPECTED, "no credentials") == (("sslmode", "require"), ("x", ""))


@pytest.mark.parametrize(("url", "message"), [
    ("postgresql://h:99999/db", "malformed URL (the port must be a number between 1 and 65535): expected X"),
    ("postgresql://h/db#frag", "malformed URL: nothing may follow '#': expected X"),
    ("postgresql://h/db?novalue", "malformed URL: the parameters after '?' are not key=value pairs: expected X"),
    ("postgresql://h/db?PASSWORD=secret", "no credentials"),
])
def test_problems_never_quote_the_url(url: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        split, _ = split_url(url, "malformed URL", EXPECTED)
        url_params(split, "malformed URL", EXPECTED, "no credentials")
    assert str(caught.value) == message
    assert "secret" not in str(caught.value)


def test_host() -> None:
    assert url_host("::1") == "[::1]" and url_host("db.example") == "db.example"
