"""The CLI's argument handling (no daemon: a closed port answers)."""

from __future__ import annotations

import pytest

from catalogd.cli.app import _json_first, main


def test_json_moves_to_the_front_from_anywhere_before_a_double_dash() -> None:
    assert _json_first(["dt", "describe", "a.b.c", "--json"]) == ["--json", "dt", "describe", "a.b.c"]
    assert _json_first(["--json", "dt", "list"]) == ["--json", "dt", "list"]
    assert _json_first(["dt", "list"]) == ["dt", "list"]
    assert _json_first(["sql", "--", "--json"]) == ["sql", "--", "--json"]
    assert _json_first(["dt", "--json", "list", "--json", "--", "x"]) == ["--json", "dt", "list", "--", "x"]


@pytest.mark.parametrize("args", [["dt", "list", "main.db", "--json"], ["dt", "describe", "main.db.t", "--json"],
                                  ["dt", "history", "main.db.t", "--limit", "3", "--json"]])
def test_a_trailing_json_is_no_usage_error(args: list[str], closed_port: int,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--server", f"127.0.0.1:{closed_port}", *args])
    err = capsys.readouterr().err
    # Parsed fine: the command got as far as the (absent) daemon.
    assert code == 1, err
    assert err.startswith("error: ") and not err.startswith("error: usage")


def test_an_unknown_option_is_still_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dt", "list", "--jsn"]) == 2
    assert capsys.readouterr().err.startswith("error: usage: ")


@pytest.mark.parametrize("args", [[], ["table"], ["dt"], ["table", "partition"]])
def test_a_command_alone_prints_its_help_and_succeeds(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"Usage: catalogd {' '.join(args)}".rstrip() + " [OPTIONS] COMMAND")
    assert err == ""


@pytest.mark.parametrize("args", [["--help"], ["dt", "--help"], ["stage", "--help"], ["table", "--help"]])
def test_help_shows_every_command_description_whole(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 0
    out = capsys.readouterr().out
    commands = out.split("Commands:", 1)[1]
    # click marks a description it cut with a trailing "...".
    assert not [line for line in commands.splitlines() if line.endswith("...")]
    if args == ["dt", "--help"]:
        assert "partition already running." in " ".join(commands.split())
