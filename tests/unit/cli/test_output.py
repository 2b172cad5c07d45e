"""The CLI's output layer: every result prints as text and as JSON, and commands never choose between them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import catalogd.cli
from catalogd.cli import json_form, output, results, text_form
from catalogd.cli.failures import ConfigRejected, RefreshFailed
from catalogd.errors import TableNotFoundError
from catalogd.model import Column, RefreshJob, RefreshRun, RunStatus, Table, TableKind

#: Result views that are printed the same way in both modes, or never printed themselves.
_SPECIAL = {results.Message, results.Failed}


def _views() -> list[type]:
    return [cls for cls in vars(results).values()
            if dataclasses.is_dataclass(cls) and cls.__module__ == results.__name__ and cls not in _SPECIAL]


@pytest.mark.parametrize("cls", _views(), ids=lambda c: c.__name__)
def test_every_result_view_has_a_json_and_a_text_form(cls: type) -> None:
    assert json_form.to_json.dispatch(cls) is not json_form.to_json.dispatch(object)
    assert text_form.show_text.dispatch(cls) is not text_form.show_text.dispatch(object)


def test_a_result_without_a_form_is_a_bug_not_silence() -> None:
    with pytest.raises(TypeError, match="no JSON form for int"):
        output.emit(42, as_json=True)
    with pytest.raises(TypeError, match="no text form for int"):
        output.emit(42, as_json=False)


def test_none_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    output.emit(None, as_json=True)
    output.emit(None, as_json=False)
    assert capsys.readouterr() == ("", "")


def test_a_message_is_the_same_line_in_both_modes(capsys: pytest.CaptureFixture[str]) -> None:
    output.emit(results.Message("ok"), as_json=True)
    output.emit(results.Message("ok"), as_json=False)
    assert capsys.readouterr().out == "ok\nok\n"


def test_json_is_indented_in_field_order(capsys: pytest.CaptureFixture[str]) -> None:
    output.emit(results.Done("renamed", "table", "main.db.a", "b"), as_json=True)
    text = capsys.readouterr().out
    assert text == '{\n  "renamed": "main.db.a",\n  "to": "b"\n}\n'


def test_a_view_is_shown_as_a_view_and_a_table_as_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    view = Table("v", "db", "main", columns=[Column("x", "int")], format=None, kind=TableKind.VIEW,
                 view_text="SELECT 1 AS x", view_expanded_text="SELECT 1 AS `x`")
    output.emit(results.View(view), as_json=True)
    as_view = json.loads(capsys.readouterr().out)
    output.emit(view, as_json=True)
    as_table = json.loads(capsys.readouterr().out)
    assert (as_view["query"], as_view["expanded_query"]) == ("SELECT 1 AS x", "SELECT 1 AS `x`")
    assert "kind" not in as_view and "query" not in as_table
    assert as_table["kind"] == "VIEW"


def test_an_empty_list_still_prints_its_header(capsys: pytest.CaptureFixture[str]) -> None:
    output.emit(results.Names("view", []), as_json=False)
    output.emit(results.Stages([]), as_json=False)
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines == [["view"], ["id", "target", "purpose", "state", "owner", "created", "lease", "deadline"]]


def test_errors_are_one_line_and_rejected_configurations_one_line_per_problem(
        capsys: pytest.CaptureFixture[str]) -> None:
    output.print_error(TableNotFoundError("main.db.t does not exist"))
    output.print_error(RefreshFailed("refresh job j failed: boom"))
    output.print_error(ConfigRejected(["a.yaml: unknown key 'x'", "a.yaml: two defaults"]))
    assert capsys.readouterr() == ("", "error: not-found: main.db.t does not exist\n"
                                       "error: refresh-failed: refresh job j failed: boom\n"
                                       "a.yaml: unknown key 'x'\na.yaml: two defaults\n")


def test_refresh_progress_prints_a_line_only_when_a_run_changes(capsys: pytest.CaptureFixture[str]) -> None:
    progress = output.RefreshProgress()
    running = RefreshRun("r1", "main.db.dt", "manual", RunStatus.RUNNING, partition={"ds": "x"}, phase="writing")
    done = dataclasses.replace(running, status=RunStatus.SUCCEEDED, phase=None)
    for job in (RefreshJob("j", RunStatus.RUNNING, [running]), RefreshJob("j", RunStatus.RUNNING, [running]),
                RefreshJob("j", RunStatus.SUCCEEDED, [done])):
        progress(job)
    out, err = capsys.readouterr()
    assert out == ""
    assert [line.split(" ", 2)[2] for line in err.splitlines()] == [
        "main.db.dt ds=x: RUNNING (writing)", "main.db.dt ds=x: SUCCEEDED"]


def test_no_command_chooses_between_text_and_json() -> None:
    package = Path(catalogd.cli.__file__).parent
    choosing = sorted(p.name for p in package.glob("*.py") if "as_json" in p.read_text())
    assert choosing == ["app.py", "output.py"]
