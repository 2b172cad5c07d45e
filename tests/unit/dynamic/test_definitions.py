"""A dynamic table's stored definition is data, not authority: catalogd signs it
(``signing``), checks it against its rules (``validation``) when it is created and before each
run (``JobFactory.spec``), refuses or adopts unsigned ones at a load (``Loader``), and shows a
job's error without the data it quotes (``redaction``)."""

from __future__ import annotations

import datetime
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from catalogd.dynamic import store
from catalogd.dynamic.freshness import parse_freshness
from catalogd.dynamic.jobspec import JobFactory
from catalogd.dynamic.loader import Loader
from catalogd.dynamic.redaction import shown_error
from catalogd.dynamic.registry import Entry, Registry
from catalogd.dynamic.signing import DefinitionSigner
from catalogd.dynamic.validation import check_definition, check_query, check_sources
from catalogd.errors import InvalidArgumentError, PermissionDeniedError, TableNotFoundError
from catalogd.model import Column, DynamicTable, RefreshMode, RefreshState, RunStatus, Table, TableKind

FULL = "main.db.t"


def definition(query: str = "SELECT `s`.`a` AS `a` FROM `db`.`s` AS `s`", freshness: str = "1 hour",
               mode: RefreshMode = RefreshMode.FULL) -> dict[str, str]:
    dt = DynamicTable(catalog="main", database="db", name="t", query=query, freshness=freshness,
                      expanded_query=query, declared_mode=None, refresh_mode=mode, state=RefreshState.RUNNING)
    return store.definition_params(dt, ["db.s"], 1700000000.0)


# ---------------------------------------------------------------- signing


def test_a_signature_covers_every_field_that_decides_a_run_and_the_table() -> None:
    signer = DefinitionSigner(b"k" * 32)
    params = definition()
    params.update(signer.signed(FULL, params))
    assert signer.verify(FULL, params)
    # catalogd's bookkeeping may change without a new signature.
    assert signer.verify(FULL, {**params, **store.history_params([]), store.HANDLER: "{}", store.DATA_TIME: "1"})
    forged = {
        store.FRESHNESS: "1 second", store.DECLARED_MODE: "CONTINUOUS", store.OPTIONS: '{"x": "y"}',
        store.SOURCES: "db.other", store.SOURCE_CATALOG: "hive", store.CREATED: "1",
        f"{store.EXPANDED}.0": "SELECT CAST(value AS INT) FROM text.`file:///s`", f"{store.QUERY}.0": "SELECT 1",
        f"{store.EXPANDED}.1": " UNION ALL SELECT 2",  # a chunk appended to the signed query
    }
    for key, value in forged.items():
        assert not signer.verify(FULL, {**params, key: value}), key
    assert not signer.verify("main.db.other", params)  # copied onto another table
    assert not DefinitionSigner(b"x" * 32).verify(FULL, params)  # another key
    unsigned = {k: v for k, v in params.items() if k != store.SIGNATURE}
    assert not signer.verify(FULL, unsigned)
    assert not signer.verify(FULL, {**unsigned, store.SIGNATURE: ""})


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(("query", "why"), [
    ("SELECT CAST(value AS INT) FROM text.`file:///tmp/secret.txt`", "a path or a file"),
    ("SELECT * FROM parquet.`/data/x`", "a path or a file"),
    ("SELECT * FROM `db`.`a/b`", "a path or a file"),
    ("SELECT * FROM read_files('/etc')", "read_files"),
    ("SELECT * FROM IDENTIFIER('db.s')", "identifier"),
    ("SELECT reflect('java.lang.System', 'getenv', 'PGPASSWORD') AS a FROM db.s", "reflect"),
    ("SELECT java_method('java.lang.System', 'getenv', 'X') AS a FROM db.s", "java_method"),
    ("SELECT input_file_name() AS a FROM db.s", "input_file_name"),
    ("SELECT a FROM other.db.s", "another catalog"),
    ("SELECT 1; SELECT 2", "one SELECT"),
    ("", "no query"),
])
def test_a_query_reaching_outside_the_catalog_s_tables_is_refused(query: str, why: str) -> None:
    with pytest.raises(InvalidArgumentError, match=why):
        check_query(query, "dynamic table main.db.t", frozenset({"main"}))


def test_plain_tables_ctes_and_generators_are_fine() -> None:
    assert sorted(check_query("WITH c AS (SELECT a FROM db.s) SELECT a FROM c JOIN main.db.u ON true "
                              "CROSS JOIN range(3)", "dt", frozenset({"main"}))) == [("db", "s"), ("db", "u")]


class Tables:
    """A catalog's tables for ``resolve``: a table, and views over it (one forged over a file)."""

    def __init__(self) -> None:
        self.tables = {
            ("db", "s"): Table(name="s", database="db", catalog="main", columns=[Column("a", "int")]),
            ("db", "v"): Table(name="v", database="db", catalog="main", kind=TableKind.VIEW,
                               view_text="SELECT a FROM s", view_expanded_text="SELECT `s`.`a` FROM `db`.`s`"),
            ("db", "w"): Table(name="w", database="db", catalog="main", kind=TableKind.VIEW,
                               view_text="SELECT a FROM v"),
            ("db", "bad"): Table(name="bad", database="db", catalog="main", kind=TableKind.VIEW,
                                 view_text="SELECT value AS a FROM text.`file:///tmp/secret.txt`"),
            ("db", "loop"): Table(name="loop", database="db", catalog="main", kind=TableKind.VIEW,
                                  view_text="SELECT a FROM loop"),
        }

    def get(self, database: str, name: str) -> Table:
        try:
            return self.tables[(database, name)]
        except KeyError:
            raise TableNotFoundError(f"{database}.{name}") from None


def test_sources_must_exist_and_views_are_held_to_the_same_rules() -> None:
    tables = Tables()
    assert check_sources("SELECT a FROM w", "dt", "db", tables.get) == ["db.w"]
    with pytest.raises(InvalidArgumentError, match=r"view db.bad .* a path or a file"):
        check_sources("SELECT a FROM db.w UNION ALL SELECT a FROM bad", "dt", "db", tables.get)
    # Spark reads a missing ``format.name`` as a file: a source must be a table of the catalog.
    with pytest.raises(InvalidArgumentError, match=r"text\.secret, which is not a table"):
        check_sources("SELECT value FROM text.secret", "dt", "db", tables.get)
    with pytest.raises(InvalidArgumentError, match="nested deeper"):
        check_sources("SELECT a FROM loop", "dt", "db", tables.get)


def test_a_stored_freshness_and_options_must_be_catalogd_s() -> None:
    tables = Tables()
    check_definition("dt", definition(), "db", tables.get)
    check_definition("dt", definition(freshness="1 second"), "db", tables.get)  # a FULL schedule catalogd allows
    for freshness in ("0 second", "1 fortnight", "7 minute", "-1 hour"):
        with pytest.raises(InvalidArgumentError, match="freshness"):
            check_definition("dt", definition(freshness=freshness), "db", tables.get)
    for options in ('{"catalogd.dt.freshness": "1 s"}', "[1]", '{"a": 1}'):
        with pytest.raises(InvalidArgumentError, match="options"):
            check_definition("dt", {**definition(), store.OPTIONS: options}, "db", tables.get)


# ---------------------------------------------------------------- before each run


class Catalog:
    name = "main"

    def __init__(self, params: dict[str, str]) -> None:
        self.params = params
        self.sources = Tables()
        self.writes: list[dict[str, str]] = []

    def fresh(self) -> Catalog:
        return self

    def info(self) -> Any:
        return SimpleNamespace(read_only=False)

    def get_table(self, database: str, name: str) -> Table:
        if (database, name) == ("db", "t"):
            return Table(name="t", database="db", catalog="main", properties=dict(self.params))
        return self.sources.get(database, name)

    def update_table_parameters(self, database: str, name: str, set: dict[str, str],
                                remove_prefixes: tuple[str, ...] = (), add_columns: Any = ()) -> dict[str, str]:
        self.params = {k: v for k, v in self.params.items() if not (remove_prefixes and k.startswith(remove_prefixes))}
        self.params.update(set)
        self.writes.append(set)
        return self.params


def jobs_for(tmp_path: Path, catalog: Catalog) -> JobFactory:
    manager: Any = SimpleNamespace(catalog=lambda name=None: catalog)
    config: Any = SimpleNamespace(staging=SimpleNamespace(secret=None),
                                  server=SimpleNamespace(data_dir=tmp_path, tls=None))
    return JobFactory(manager, config, lambda: "127.0.0.1:1", tmp_path / "dynamic")


def full_entry() -> Entry:
    return Entry("main", "db", "t", parse_freshness("1 hour"), RefreshMode.FULL, RefreshState.RUNNING)


def test_a_run_executes_only_a_definition_catalogd_signed_that_keeps_the_rules(tmp_path: Path) -> None:
    catalog = Catalog(definition())
    jobs = jobs_for(tmp_path, catalog)
    with pytest.raises(PermissionDeniedError, match="not signed by catalogd"):
        jobs.spec(full_entry(), tmp_path / "run", "batch")
    catalog.params.update(jobs.signer.signed(FULL, catalog.params))
    assert jobs.spec(full_entry(), tmp_path / "run", "batch")["query"] == store.unchunk(catalog.params, store.EXPANDED)
    # The key is the stage key (generated into the data dir): a restart signs and checks alike.
    assert jobs_for(tmp_path, catalog).signer.verify(FULL, catalog.params)
    # Signed, but its source became a view over a file since: checked again, refused.
    catalog.sources.tables[("db", "s")] = catalog.sources.tables[("db", "bad")]
    with pytest.raises(InvalidArgumentError, match="a path or a file"):
        jobs.spec(full_entry(), tmp_path / "run", "batch")


# ---------------------------------------------------------------- at a load


def loader_for(tmp_path: Path, catalog: Catalog) -> tuple[Loader, JobFactory]:
    jobs = jobs_for(tmp_path, catalog)
    manager: Any = SimpleNamespace(catalog=lambda name=None: catalog, catalogs=lambda: {"main": catalog})
    config: Any = SimpleNamespace(dynamic_tables=SimpleNamespace(history_size=50))
    records: Any = SimpleNamespace(jobs=jobs)
    loader = Loader(manager, config, Registry(), records, None, None, threading.Event(),  # type: ignore[arg-type]
                    lambda: datetime.datetime.now(datetime.UTC))
    return loader, jobs


def test_a_forged_definition_is_refused_at_a_load_and_its_history_says_why(tmp_path: Path) -> None:
    forged = definition("SELECT CAST(value AS INT) AS a FROM text.`file:///tmp/secret.txt`", "1 second")
    catalog = Catalog({**forged, store.SIGNATURE: "v1:" + "0" * 64})
    loader, _ = loader_for(tmp_path, catalog)
    for _ in range(2):  # kept once, not once per load
        with pytest.raises(PermissionDeniedError, match="not signed by catalogd"):
            loader.restore("main", "db", "t", dict(catalog.params), 0.0)
    refusal = loader.refusal(FULL)
    assert refusal is not None and (refusal.status, refusal.trigger) == (RunStatus.FAILED, "refused")
    assert "never run" in (refusal.error or "")
    # Nothing is written into a definition the daemon does not trust.
    assert catalog.writes == [] and store.history(catalog.params) == []


def test_an_unsigned_definition_from_before_signing_is_adopted_once_if_it_keeps_the_rules(tmp_path: Path) -> None:
    # An older version's table: no signature. At the first load it is checked and signed...
    catalog = Catalog(definition())
    loader, jobs = loader_for(tmp_path, catalog)
    signed = loader._signed("main", "db", "t", dict(catalog.params), 0.0)
    assert jobs.signer.verify(FULL, signed) and jobs.signer.verify(FULL, catalog.params)
    # ... one that breaks a rule is refused, with the rule it breaks...
    bad = Catalog(definition("SELECT a FROM text.`file:///tmp/secret.txt`"))
    bad_loader, _ = loader_for(tmp_path / "other", bad)
    with pytest.raises(InvalidArgumentError, match="a path or a file"):
        bad_loader._signed("main", "db", "t", dict(bad.params), 0.0)
    assert "a path or a file" in (bad_loader.refusal(FULL).error or "")  # type: ignore[union-attr]
    assert bad.writes == []
    # ... and once the catalog was loaded, an unsigned definition is never adopted again.
    loader._adopted("main")
    later = Catalog(definition())
    loader_later, _ = loader_for(tmp_path, later)
    with pytest.raises(PermissionDeniedError):
        loader_later._signed("main", "db", "t", dict(later.params), 0.0)


# ---------------------------------------------------------------- what users are shown


def test_a_job_s_error_keeps_its_class_and_wording_never_the_data() -> None:
    secret = "hunter2-from-a-0600-file"
    spark = (f"SparkNumberFormatException: [CAST_INVALID_INPUT] The value '{secret}' of the type \"STRING\" cannot "
             f"be cast to \"INT\" because it is malformed. SQLSTATE: 22018\n== SQL ==\nSELECT '{secret}'")
    shown = shown_error(spark)
    assert shown == ("SparkNumberFormatException: [CAST_INVALID_INPUT] The value '…' of the type \"STRING\" cannot "
                     "be cast to \"INT\" because it is malformed. SQLSTATE: 22018")
    for text in (f'NumberFormatException: For input string: "{secret}"',
                 f"SparkException: Malformed records are detected in record parsing: [{secret},1]",
                 f'"{secret.upper()}" | job.log tail \'{secret}\''):
        assert secret not in shown_error(text, first_line=False).lower()
    kept = "AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `db`.`x` cannot be found."
    assert shown_error(kept) == kept
    assert len(shown_error("x" * 5000)) == 500

