"""View texts parsed once per mapping, within bounds; views reading another catalog refused (issue 21, item 3)."""

from __future__ import annotations

import logging
import threading

import pytest

from catalogd.hive_idl import ThriftHiveMetastore, ttypes
from catalogd.hms import view_text
from catalogd.hms.federation import Federation
from catalogd.hms.refused import Refused
from catalogd.hms.rewriting import Rewriting
from catalogd.hms.view_parse import Request, Rewritten, ViewParser, depth_error
from catalogd.hms.view_text import ViewTextRefused, view_to_backing, view_to_client

P = "scratch__"


def view(db: str, text: str, name: str = "v") -> ttypes.Table:
    return ttypes.Table(dbName=db, tableName=name, tableType="VIRTUAL_VIEW", viewOriginalText=text,
                        viewExpandedText=text, parameters={})


def big_text(selects: int) -> str:
    """A view text of about 80 characters per SELECT, every one naming two tables."""
    parts = [f"SELECT a{i}, b FROM db{i % 7}.t{i} JOIN other.c ON t{i}.id = c.id WHERE x > {i}" for i in range(selects)]
    return "SELECT * FROM (" + " UNION ALL ".join(parts) + ") u"


@pytest.fixture
def parser():
    made = ViewParser(view_text.compute, lambda: 30.0)
    yield made
    made.close()


# ---------------------------------------------------------------- the cache


def test_a_text_is_parsed_once_per_mapping(parser):
    text = "SELECT * FROM orders JOIN other.c"
    for _ in range(5):
        table = ttypes.Table(dbName="sales", tableName="v", tableType="VIRTUAL_VIEW", viewOriginalText=text,
                             viewExpandedText=text, parameters={})
        view_to_client(table, "p__", parser)
        assert table.viewOriginalText == "SELECT * FROM p__sales.orders JOIN p__other.c"
    # The original and expanded texts are the same: one parse for both, then cache hits.
    assert parser.stats()["parses"] == 1
    assert parser.stats()["hits"] == 4
    # Another prefix, default database or direction is another rewrite.
    parser.rewrite(Request(text, "client", "q__", "sales"))
    parser.rewrite(Request(text, "client", "p__", "other"))
    parser.rewrite(Request(text, "backing", "p__"))
    assert parser.stats()["parses"] == 4


def test_the_cache_is_bounded_in_entries_and_bytes():
    parser = ViewParser(view_text.compute, cache_entries=3, cache_bytes=10_000)
    for i in range(5):
        parser.rewrite(Request(f"SELECT * FROM t{i}", "client", "p__", "db"))
    assert parser.stats()["entries"] == 3
    # The oldest went first: t0 is parsed again, t4 is not.
    parser.rewrite(Request("SELECT * FROM t4", "client", "p__", "db"))
    assert parser.stats()["parses"] == 5
    parser.rewrite(Request("SELECT * FROM t0", "client", "p__", "db"))
    assert parser.stats()["parses"] == 6
    # Bytes: a text larger than the whole budget is not kept; smaller ones push older ones out.
    long = "SELECT * FROM t WHERE x = '" + "y" * 12_000 + "'"
    parser.rewrite(Request(long, "client", "p__", "db"))
    assert parser.stats()["bytes"] <= 10_000
    parser.rewrite(Request(long, "client", "p__", "db"))
    assert parser.stats()["parses"] == 8
    for i in range(3):
        parser.rewrite(Request("SELECT * FROM t WHERE x = '" + "z" * 4_000 + f"{i}'", "client", "p__", "db"))
    stats = parser.stats()
    assert stats["bytes"] <= 10_000 and stats["entries"] == 2


def test_callers_of_a_text_being_parsed_wait_for_that_parse():
    started, release = threading.Event(), threading.Event()

    def slow(request: Request) -> Rewritten:
        started.set()
        assert release.wait(30)
        return view_text.compute(request)

    parser = ViewParser(slow)
    results: list[str] = []
    request = Request("SELECT * FROM orders", "client", "p__", "p__sales")
    threads = [threading.Thread(target=lambda: results.append(parser.rewrite(request).text)) for _ in range(4)]
    threads[0].start()
    assert started.wait(30)
    for thread in threads[1:]:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(30)
    assert results == ["SELECT * FROM p__sales.orders"] * 4
    assert parser.stats()["parses"] == 1


# ---------------------------------------------------------------- the bounds


def test_depth_counts_parentheses_and_case_outside_literals_and_comments():
    assert depth_error("SELECT '((((' , `(((`, \"((\" -- ((((\n /* ((( */ FROM (((t)))", 3) is None
    assert depth_error("SELECT '((((' FROM (((t)))", 2) == "it nests 3 levels deep, over the bound of 2"
    assert depth_error("SELECT CASE WHEN CASE WHEN a THEN b END THEN c END FROM t", 1) == (
        "it nests 2 levels deep, over the bound of 1")


def test_deep_nesting_is_refused_before_parsing(parser):
    text = "SELECT * FROM " + "(SELECT * FROM " * 2000 + "db.t" + ") x" * 2000
    result = parser.rewrite(Request(text, "backing", P))
    assert result.refused == "it nests 2000 levels deep, over the bound of 64"
    assert result.text == text
    assert parser.stats()["parses"] == 0  # sqlglot never saw it


def test_nesting_the_scan_does_not_see_is_refused_too(parser):
    result = parser.rewrite(Request("SELECT " + "NOT " * 3000 + "x FROM scratch__a.b", "backing", P))
    assert result.refused == "it nests too deeply for the parser"


def test_long_texts_are_parsed_in_a_worker(parser):
    text = big_text(300)
    assert len(text) > parser.inline_text
    result = parser.rewrite(Request(text, "client", "p__", "p__sales"))
    assert result.problem is None and "FROM p__db0.t0 JOIN p__other.c" in result.text
    assert result.text == view_text.compute(Request(text, "client", "p__", "p__sales")).text
    assert parser.stats()["worker_parses"] == 1


def test_a_parse_past_its_time_bound_is_given_up_and_its_worker_replaced():
    parser = ViewParser(view_text.compute, lambda: 0.05)
    try:
        # The worker started and ready: the bound is the parse's, not the start's.
        parser.rewrite(Request(big_text(200), "client", "p__", "db"))
        text = big_text(3000)  # about 240 KB: well over 50 ms of parsing
        result = parser.rewrite(Request(text, "backing", P))
        assert result.refused == "parsing it took longer than 0.05s (server.hms-view-parse-timeout)"
        assert result.text == text
        assert parser.stats()["timeouts"] >= 1
        # Kept for a while: the next reader does not spend the bound again.
        timeouts = parser.stats()["timeouts"]
        assert parser.rewrite(Request(text, "backing", P)).refused == result.refused
        assert parser.stats()["timeouts"] == timeouts
    finally:
        parser.close()
    # A new worker serves the next text.
    roomy = ViewParser(view_text.compute, lambda: 60.0)
    try:
        assert roomy.rewrite(Request(big_text(300), "client", "p__", "db")).problem is None
    finally:
        roomy.close()


def test_a_read_that_hit_a_bound_returns_the_text_as_stored_with_a_warning(parser, caplog):
    text = "SELECT * FROM " + "(SELECT * FROM " * 100 + "db.t" + ") x" * 100
    table = view("sales", text)
    table.parameters = {"view.default.database": "sales"}
    with caplog.at_level(logging.WARNING, logger="catalogd.hms.view_text"):
        view_to_client(table, "p__", parser)
    assert table.viewOriginalText == text
    assert "over the bound of 64" in caplog.text
    assert table.parameters == {"view.default.database": "p__sales"}


# ---------------------------------------------------------------- refusals at create and alter


@pytest.mark.parametrize(("text", "named"), [
    ("SELECT * FROM v_x.base", "v_x"),  # a database of the default catalog
    ("SELECT * FROM ro__v_x.base", "ro__v_x"),  # another prefixed catalog's
    ("SELECT * FROM scratch__v_x.a JOIN spark_catalog.v_x.base", "v_x"),
    ("SELECT v_x.f(id) FROM scratch__v_x.a", "v_x"),  # a function of another catalog's database
])
def test_a_view_naming_another_catalogs_database_is_refused(parser, text, named):
    with pytest.raises(ViewTextRefused) as refused:
        view_to_backing(view("scratch__v_x", text), P, parser)
    assert refused.value.message == (
        f"the text of view scratch__v_x.v names database {named}, not one of this catalog's (scratch__*): "
        f"a view can read only its own catalog's databases (stored, the name would be read back as "
        f"scratch__{named}, another database)")


def test_a_view_holding_two_statements_is_refused(parser):
    with pytest.raises(ViewTextRefused, match=r"view scratch__v_x\.v holds 2 statements; a view is one query"):
        view_to_backing(view("scratch__v_x", "SELECT * FROM scratch__v_x.a; DROP DATABASE scratch__v_x"), P, parser)


def test_a_view_over_a_bound_is_refused_at_create(parser):
    text = "SELECT * FROM " + "(SELECT * FROM " * 65 + "scratch__v_x.t" + ") x" * 65
    with pytest.raises(ViewTextRefused, match=r"cannot be checked: it nests 65 levels deep, over the bound of 64"):
        view_to_backing(view("scratch__v_x", text), P, parser)


def test_names_that_are_no_metastore_database_of_another_catalog_are_accepted(parser):
    table = view("scratch__v_x", "SELECT * FROM scratch__v_x.a, global_temp.g, other_cat.db.t, parquet.`/x`, "
                                 "unqualified, SCRATCH__other.b")
    view_to_backing(table, P, parser)
    assert table.viewOriginalText == "SELECT * FROM v_x.a, global_temp.g, other_cat.db.t, parquet.`/x`, " \
                                     "unqualified, other.b"


def test_a_view_made_in_another_spark_catalog_may_name_that_catalogs_namespaces(parser):
    table = view("scratch__v_x", "SELECT * FROM sales.c JOIN spark_catalog.scratch__v_x.d")
    table.parameters = {"view.catalogAndNamespace.numParts": "2", "view.catalogAndNamespace.part.0": "iceberg",
                        "view.catalogAndNamespace.part.1": "sales"}
    view_to_backing(table, P, parser)
    assert table.viewOriginalText == "SELECT * FROM sales.c JOIN spark_catalog.v_x.d"
    table.viewOriginalText = table.viewExpandedText = "SELECT * FROM spark_catalog.v_x.base"
    with pytest.raises(ViewTextRefused, match="names database v_x"):
        view_to_backing(table, P, parser)


def test_the_endpoint_answers_a_refused_view_with_a_meta_exception():
    rewriting = Rewriting(lambda: Federation({"main": "", "scratch": P}, "main"))
    try:
        args = ThriftHiveMetastore.create_table_args(tbl=view("scratch__v_x", "SELECT * FROM v_x.base"))
        with pytest.raises(Refused) as refused:
            rewriting.to_backing("create_table", args, "scratch")
        assert isinstance(refused.value.exc, ttypes.MetaException)
        assert refused.value.exc.message.startswith("catalogd: the text of view scratch__v_x.v names database v_x")
        assert refused.value.exc.message.endswith("; create_table refused")
    finally:
        rewriting.close()


def test_a_worker_that_died_between_parses_is_replaced(parser):
    parser.rewrite(Request(big_text(300), "client", "p__", "p__db"))
    (worker,) = parser._pool._idle
    worker.proc.kill()
    worker.proc.wait()
    # Not yet known to be gone (poll() may not have seen it): the request fails to send, a new worker answers.
    worker.alive = lambda: True  # type: ignore[method-assign]
    result = parser.rewrite(Request(big_text(301), "client", "p__", "p__db"))
    assert result.problem is None and result.refused is None
    assert parser.stats()["timeouts"] == 0
