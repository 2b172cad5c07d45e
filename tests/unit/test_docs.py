"""The documentation site's sources against the code: pages that code names exist, the
hand-written CLI table names real commands and flags, every config key has a meaning.

(`make docs` checks links and anchors between pages; these are what it cannot see.)
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import click
import pytest

from catalogd.cli.app import cli

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_pages_named_in_the_code_exist() -> None:
    named: dict[str, list[str]] = {}
    for path in (REPO / "catalogd").rglob("*.py"):
        if "gen" in path.relative_to(REPO / "catalogd").parts[:1]:
            continue
        for page in re.findall(r"\bdocs/[\w/-]+\.md\b", path.read_text()):
            named.setdefault(page, []).append(str(path.relative_to(REPO)))
    assert named, "no docstring names a docs page any more: drop this test or the pages"
    missing = {page: where for page, where in named.items() if not (REPO / page).is_file()}
    assert not missing, f"docs pages named in the code but missing: {missing}"
    assert not [p for p in (REPO / "catalogd").rglob("*.py") if "DESIGN.md" in p.read_text()]


def test_readme_links_to_existing_pages() -> None:
    readme = (REPO / "README.md").read_text()
    pages = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert pages
    assert [p for p in pages if not (REPO / p).is_file()] == []
    assert len(readme.splitlines()) <= 200


def _command(path: list[str]) -> click.Command | None:
    command: click.Command | None = cli
    for name in path:
        if not isinstance(command, click.Group):
            return None
        command = command.commands.get(name)
    return command


def _glance_rows() -> list[str]:
    text = (DOCS / "cli.md").read_text()
    table = text[text.index("## Commands at a glance"):text.index("## Names")]
    return [line for line in table.splitlines() if line.startswith("| `")]


def test_cli_table_names_real_commands_and_flags() -> None:
    rows = _glance_rows()
    assert len(rows) > 30
    global_flags = {opt for p in cli.params for opt in getattr(p, "opts", [])}
    problems = []
    for row in rows:
        usage = row.split("|")[1] if "\\|" not in row else row.replace("\\|", "\x00").split("|")[1]
        for part in re.findall(r"`([^`]+)`", usage):
            words = part.replace("\x00", "|").split()
            path: list[str] = []
            for word in words:
                if not re.fullmatch(r"[a-z][a-z|-]*", word):
                    break
                path.append(word)
            # `dt suspend|resume`: each alternative is a command.
            alternatives = [[*path[:-1], alt] for alt in path[-1].split("|")] if path else []
            for alternative in alternatives:
                command = _command(alternative)
                if command is None:
                    problems.append(f"no command `catalogd {' '.join(alternative)}` ({part})")
                    continue
                flags = {opt for p in command.params for opt in getattr(p, "opts", [])} | global_flags
                for flag in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", part):
                    if flag not in flags:
                        problems.append(f"`catalogd {' '.join(alternative)}` has no flag {flag}")
    assert problems == []


def test_every_config_key_has_a_meaning_in_the_reference() -> None:
    text = _reference().config_reference()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert any(r.startswith("| `server.hms-port`") for r in rows)
    assert any(r.startswith("| `catalogs[].allowed-locations`") for r in rows)
    assert any(r.startswith("| `auth.grants[].role`") for r in rows)
    blank = [r.split("|")[1].strip() for r in rows if r.rstrip().endswith("|  |")]
    assert blank == [], f"config keys with no meaning (add a #: comment on the field): {blank}"


@pytest.mark.parametrize("name", ["cli", "http"])
def test_the_other_references_generate(name: str) -> None:
    text = _reference().GENERATORS[name]()
    if name == "cli":
        assert "{#cli-dt-refresh}" in text and "--schedule-time" in text
    else:
        assert "/v3/dynamic-tables/refresh" in text and "RefreshRequest" in text


def test_the_safety_page_lists_every_hms_write_method_with_its_rule() -> None:
    from catalogd.hms import methods

    assert "<!-- generated: hms_writes -->" in (DOCS / "operations.md").read_text()
    text = _reference().GENERATORS["hms_writes"]()
    for method in (m for m in methods.IDL_METHODS if methods.kind(m) is methods.Kind.WRITE):
        assert f"| `{method}` |" in text, method
    assert "| `drop_partitions_req` | judged: drop |" in text and "| `add_index` | refused |" in text
