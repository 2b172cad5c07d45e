"""The metadata cache: LRU by entries and bytes, TTL, invalidation scopes, the token race; and the
hive catalog reading through it (on the in-memory HMS of tests/unit/fake_hms.py)."""

from __future__ import annotations

import inspect
import threading
from unittest.mock import MagicMock

import pytest
from fake_hms import FakeHms

from catalogd.catalog.caching_client import CachingHiveClient
from catalogd.catalog.caching_client import written_keys as _written_keys
from catalogd.catalog.hive import HiveCatalog
from catalogd.catalog.hive_api import HiveClient
from catalogd.catalog.hms_cache import MetadataCache
from catalogd.hive_idl import ttypes as hms
from catalogd.model import Column, Database, Function, FunctionLanguage, Table, TableUpdate


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cache(ttl: float = 10.0, entries: int = 100, size: int = 10_000, clock: Clock | None = None) -> MetadataCache:
    return MetadataCache(ttl, entries, size, clock=clock or Clock())


def store(c: MetadataCache, scope: tuple[str, str, str], key: object, value: bytes = b"v") -> None:
    c.put(scope, key, value, c.token(scope))  # type: ignore[arg-type]


T = ("main", "sales", "orders")
T2 = ("main", "sales", "items")
DB = ("main", "sales", "")
DB2 = ("main", "hr", "")
CAT = ("main", "", "")
OTHER = ("scratch", "sales", "orders")


# --------------------------------------------------------------------------- storing and finding


def test_a_stored_answer_is_found_until_its_ttl_runs_out() -> None:
    clock = Clock()
    c = cache(ttl=5, clock=clock)
    assert c.get(T, "k") is None
    store(c, T, "k", b"answer")
    assert c.get(T, "k") == b"answer"
    clock.now += 4.9
    assert c.get(T, "k") == b"answer"
    clock.now += 0.2
    assert c.get(T, "k") is None
    assert c.stats()["entries"] == 0


def test_the_ttl_counts_from_when_the_fetch_began() -> None:
    clock = Clock()
    c = cache(ttl=5, clock=clock)
    token = c.token(T)
    clock.now += 4  # a slow metastore
    c.put(T, "k", b"answer", token)
    clock.now += 1.5
    assert c.get(T, "k") is None
    token = c.token(T)
    clock.now += 6
    c.put(T, "k", b"answer", token)  # already expired: not stored at all
    assert c.stats()["entries"] == 0


def test_names_in_scopes_are_lower_cased() -> None:
    c = cache()
    store(c, ("main", "Sales", "ORDERS"), "k")
    assert c.get(T, "k") == b"v"
    c.invalidate("main", "SALES", "Orders")
    assert c.get(T, "k") is None


def test_ttl_zero_turns_the_cache_off() -> None:
    c = cache(ttl=0)
    assert not c.enabled
    store(c, T, "k")
    assert c.get(T, "k") is None
    stats = c.stats()
    assert (stats["entries"], stats["bytes"], stats["hits"], stats["misses"]) == (0, 0, 0, 1)


# --------------------------------------------------------------------------- bounds


def test_the_least_recently_used_go_first_when_entries_are_too_many() -> None:
    c = cache(entries=3)
    for key in ("a", "b", "c"):
        store(c, T, key)
    assert c.get(T, "a") == b"v"  # now b is the least recently used
    store(c, T, "d")
    assert c.get(T, "b") is None
    assert [c.get(T, k) for k in ("a", "c", "d")] == [b"v"] * 3
    stats = c.stats()
    assert (stats["entries"], stats["evictions"]) == (3, 1)
    assert stats["catalogs"]["main"]["evictions"] == 1


def test_the_least_recently_used_go_first_when_bytes_are_too_many() -> None:
    c = cache(size=100)
    store(c, T, "a", b"x" * 40)
    store(c, T, "b", b"x" * 40)
    assert c.stats()["bytes"] == 82  # the answers and the keys
    c.get(T, "a")
    store(c, T, "c", b"x" * 40)
    assert c.get(T, "b") is None and c.get(T, "a") is not None and c.get(T, "c") is not None
    assert c.stats()["bytes"] <= 100
    store(c, T, "huge", b"x" * 101)  # bigger than the whole cache: not stored, nothing evicted for it
    assert c.get(T, "huge") is None and c.get(T, "a") is not None


def test_a_replaced_entry_is_counted_once() -> None:
    c = cache()
    store(c, T, "k", b"12345")
    store(c, T, "k", b"123")
    stats = c.stats()
    assert (stats["entries"], stats["bytes"]) == (1, 4)


# --------------------------------------------------------------------------- invalidation


def _fill(c: MetadataCache) -> None:
    for scope in (T, T2, DB, DB2, CAT, ("main", "hr", "staff"), OTHER):
        store(c, scope, "k")


def _left(c: MetadataCache) -> set[tuple[str, str, str]]:
    return {s for s in (T, T2, DB, DB2, CAT, ("main", "hr", "staff"), OTHER) if c.get(s, "k") is not None}


def test_a_table_write_invalidates_the_table_its_database_and_the_catalog() -> None:
    c = cache()
    _fill(c)
    c.invalidate("main", "sales", "orders")
    assert _left(c) == {T2, DB2, ("main", "hr", "staff"), OTHER}


def test_a_database_write_invalidates_the_database_all_its_tables_and_the_catalog() -> None:
    c = cache()
    _fill(c)
    c.invalidate("main", "sales")
    assert _left(c) == {DB2, ("main", "hr", "staff"), OTHER}


def test_a_catalog_invalidation_forgets_everything_of_it_and_nothing_else() -> None:
    c = cache()
    _fill(c)
    c.invalidate("main")
    assert _left(c) == {OTHER}
    stats = c.stats()
    assert stats["catalogs"]["main"]["entries"] == 0 and stats["catalogs"]["scratch"]["entries"] == 1


# --------------------------------------------------------------------------- the race of a reader and a writer


@pytest.mark.parametrize("written", [
    ("main", "sales", "orders"),  # the table itself
    ("main", "sales", ""),        # its database
    ("main", "", ""),             # its catalog
])
def test_an_answer_fetched_before_a_write_is_not_stored_after_it(written: tuple[str, str, str]) -> None:
    c = cache()
    token = c.token(T)           # a reader begins
    c.invalidate(*written)       # a writer writes (and invalidates) meanwhile
    c.put(T, "k", b"old", token)  # the reader's answer may predate the write
    assert c.get(T, "k") is None
    store(c, T, "k", b"new")     # a reader that began after the write is stored
    assert c.get(T, "k") == b"new"


@pytest.mark.parametrize("scope", [DB, CAT])
def test_a_listing_fetched_before_a_table_write_is_not_stored_after_it(scope: tuple[str, str, str]) -> None:
    c = cache()
    token = c.token(scope)
    c.invalidate("main", "sales", "orders")
    c.put(scope, "k", b"old", token)
    assert c.get(scope, "k") is None


def test_a_write_elsewhere_does_not_keep_an_answer_out() -> None:
    c = cache()
    token = c.token(T)
    c.invalidate("main", "sales", "items")
    c.invalidate("main", "hr")
    c.invalidate("scratch")
    c.put(T, "k", b"v", token)
    assert c.get(T, "k") == b"v"


def test_forgotten_invalidation_marks_refuse_older_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    from catalogd.catalog import hms_cache

    monkeypatch.setattr(hms_cache, "_MAX_MARKS", 4)
    c = cache()
    token = c.token(T)
    c.invalidate("main", "sales", "orders")
    for n in range(10):  # pushes the mark for orders out
        c.invalidate("main", f"db{n}", "t")
    c.put(T, "k", b"old", token)
    assert c.get(T, "k") is None
    store(c, T, "k", b"new")
    assert c.get(T, "k") == b"new"


def test_concurrent_readers_and_writers_keep_the_counts_right() -> None:
    c = cache(entries=50, size=5000)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(300):
                scope = ("main", f"db{i % 3}", f"t{(i + n) % 7}")
                if c.get(scope, i % 11) is None:
                    store(c, scope, i % 11, b"x" * (i % 50))
                if i % 13 == n:
                    c.invalidate("main", f"db{i % 3}", f"t{i % 7}")
                if i % 97 == n:
                    c.invalidate("main")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stats = c.stats()
    assert 0 <= stats["entries"] <= 50 and 0 <= stats["bytes"] <= 5000
    assert stats["entries"] == len(c._entries) and stats["bytes"] == sum(e.size for e in c._entries.values())
    assert stats["hits"] + stats["misses"] == 8 * 300


def test_the_fresh_client_bypasses_the_cache_and_the_caching_one_does_not() -> None:
    c = cache()
    store(c, T, "k")
    caching = CachingHiveClient(None, "main", c)  # type: ignore[arg-type]
    fresh = caching.fresh()
    assert fresh.fresh() is fresh and caching.fresh() is fresh
    assert not fresh.enabled and caching.enabled
    found = fresh.lookup(T, "k", b"")
    assert found.body is None
    seen: list[bytes | None] = []
    other = threading.Thread(target=lambda: seen.append(c.get(T, "k")))
    other.start()
    other.join()
    assert seen == [b"v"]
    found.keep(b"v")
    fresh.lookup(T2, "k", b"").keep(b"v")
    assert c.get(T2, "k") is None and c.get(T, "k") == b"v"


# --------------------------------------------------------------------------- the hive catalog reads through it


def _catalog(fake: FakeHms, c: MetadataCache) -> HiveCatalog:
    cat = HiveCatalog("main", uris=[("127.0.0.1", 9083)], cache=c)
    cat.session.attach(fake)  # type: ignore[arg-type]
    return cat


def _orders() -> Table:
    return Table(name="orders", database="sales", columns=[Column("id", "bigint")], partition_keys=[
        Column("ds", "string")])


class Counting(FakeHms):
    """Counts the reads that reach the metastore."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[str, int] = {}

    def __getattribute__(self, name: str) -> object:
        if name.startswith("get_") and name != "get_config_value":
            reads = object.__getattribute__(self, "reads")
            reads[name] = reads.get(name, 0) + 1
        return object.__getattribute__(self, name)


@pytest.fixture
def fake() -> Counting:
    return Counting()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sales(fake: Counting, clock: Clock) -> HiveCatalog:
    cat = _catalog(fake, cache(ttl=30, entries=1000, size=1 << 20, clock=clock))
    cat.create_database(Database("sales"))
    cat.create_table(_orders())
    cat.add_partition("sales", "orders", {"ds": "1"})
    return cat


def test_user_facing_reads_are_answered_from_the_cache(sales: HiveCatalog, fake: Counting) -> None:
    def read() -> object:
        return (sales.list_databases(), sales.get_database("sales").name, sales.list_tables("sales"),
                sales.get_table("sales", "orders").name, [p.values for p in sales.list_partitions("sales", "orders")],
                sales.get_partition("sales", "orders", {"ds": "1"}).values, sales.list_views("sales"))

    first = read()
    fake.reads.clear()
    assert read() == first == (["default", "sales"], "sales", ["orders"], "orders", [["1"]], ["1"], [])
    assert fake.reads == {}
    assert sales.cache is not None and sales.cache.stats()["hits"] >= 8


def test_each_caller_gets_an_object_of_its_own(sales: HiveCatalog) -> None:
    one = sales.get_table("sales", "orders")
    one.properties["mine"] = "x"
    one.columns.append(Column("extra", "int"))
    two = sales.get_table("sales", "orders")
    assert "mine" not in two.properties and [c.name for c in two.columns] == ["id"]


def test_a_write_through_the_catalog_is_read_back_at_once(sales: HiveCatalog, fake: Counting) -> None:
    sales.get_table("sales", "orders")
    sales.list_tables("sales")
    sales.alter_table("sales", "orders", TableUpdate(set_properties={"k": "v"}))
    assert sales.get_table("sales", "orders").properties["k"] == "v"
    sales.create_table(Table(name="items", database="sales", columns=[Column("id", "bigint")]))
    assert sales.list_tables("sales") == ["items", "orders"]
    sales.rename_table("sales", "items", "goods")
    assert sales.list_tables("sales") == ["goods", "orders"]
    sales.add_partition("sales", "orders", {"ds": "2"})
    assert [p.values for p in sales.list_partitions("sales", "orders")] == [["1"], ["2"]]
    sales.drop_partition("sales", "orders", {"ds": "1"})
    assert [p.values for p in sales.list_partitions("sales", "orders")] == [["2"]]
    sales.drop_table("sales", "goods")
    assert sales.list_tables("sales") == ["orders"]
    sales.drop_database("sales", cascade=True)
    assert sales.list_databases() == ["default"]


def test_a_change_behind_catalogds_back_shows_after_the_ttl(sales: HiveCatalog, fake: Counting,
                                                            clock: Clock) -> None:
    sales.get_table("sales", "orders")
    fake.tables[("sales", "orders")].parameters["behind"] = "1"
    assert "behind" not in sales.get_table("sales", "orders").properties
    clock.now += 31
    assert sales.get_table("sales", "orders").properties["behind"] == "1"


def test_a_failed_write_invalidates_too(sales: HiveCatalog, fake: Counting) -> None:
    sales.get_table("sales", "orders")
    fake.tables[("sales", "orders")].parameters["behind"] = "1"

    def broken(*args: object) -> None:
        raise hms.MetaException("lost answer")

    fake.alter_table_with_environment_context = broken  # type: ignore[method-assign]
    with pytest.raises(Exception, match="lost answer"):
        sales.alter_table("sales", "orders", TableUpdate(set_properties={"k": "v"}))
    assert sales.get_table("sales", "orders").properties["behind"] == "1"


def test_reads_that_decide_writes_go_to_the_metastore(sales: HiveCatalog, fake: Counting) -> None:
    sales.get_table("sales", "orders")
    sales.get_database("sales")
    fake.reads.clear()
    assert sales.table_exists("sales", "orders") and sales.database_exists("sales")
    sales.fresh().get_table("sales", "orders")
    assert fake.reads == {"get_table": 2, "get_database": 1}


def test_a_function_write_invalidates_its_database(sales: HiveCatalog) -> None:
    c = sales.cache
    assert c is not None
    store(c, ("main", "sales", ""), ("hms", "get_functions"))
    sales.create_function(Function(name="f", database="sales", class_name="a.B", language=FunctionLanguage.JAVA))
    assert c.get(("main", "sales", ""), ("hms", "get_functions")) is None


def test_without_a_cache_every_read_goes_to_the_metastore(fake: Counting) -> None:
    cat = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    cat.session.attach(fake)  # type: ignore[arg-type]
    cat.get_database("default")
    cat.get_database("default")
    assert cat.cache is None and fake.reads["get_database"] == 2


def test_every_write_of_the_typed_client_names_what_it_changes() -> None:
    """A write method missing from ``_written_keys`` would leave stale answers in the cache."""
    t = hms.Table(tableName="T", dbName="d")
    p = hms.Partition(dbName="d", tableName="t", values=["1"])
    calls = {
        "create_database": (hms.Database(name="d"),), "alter_database": ("d", hms.Database(name="d")),
        "drop_database": ("d", True, False), "create_table": (t,), "alter_table": ("d", "old", t),
        "alter_table_with_environment_context": ("d", "old", t, None), "drop_table": ("d", "t", True),
        "drop_table_with_environment_context": ("d", "t", True, None), "add_partition": (p,),
        "add_partitions": ([p],), "alter_partitions": ("d", "t", [p]), "drop_partition": ("d", "t", ["1"], True),
        "drop_partition_with_environment_context": ("d", "t", ["1"], True, None),
        "create_function": (hms.Function(dbName="d", functionName="f"),), "alter_function": ("d", "f", None),
        "drop_function": ("d", "f"),
    }
    writes = {name for name, _ in inspect.getmembers(HiveClient, inspect.isfunction)
              if not name.startswith(("_", "get_", "close"))}
    assert writes == set(calls)
    for name, args in calls.items():
        assert _written_keys(name, args), name
    assert set(_written_keys("alter_table", ("d", "old", t))) == {("d", "old"), ("d", "t")}


def test_a_write_naming_no_database_or_an_unknown_write_invalidates_the_whole_catalog(sales: HiveCatalog) -> None:
    c = sales.cache
    assert c is not None
    for keys in ([(None, "t")], []):
        store(c, T, "k")
        assert sales.session.api is not None
        sales.session.api.invalidate("some_write", keys)  # type: ignore[arg-type]
        assert c.get(T, "k") is None


def test_a_catalog_removed_or_replaced_by_a_reload_is_forgotten(tmp_path: object) -> None:
    from catalogd.config import parse_config
    from catalogd.manager import CatalogManager

    def config(*names: str, ro: bool = False) -> object:
        catalogs = "".join(f"  - {{name: {n}, type: memory{', default: true' if n == 'a' else ''}"
                           f"{', read-only: true' if ro and n == 'a' else ''}}}\n" for n in names)
        return parse_config(f"server: {{data-dir: {tmp_path}}}\ncatalogs:\n{catalogs}")

    c = cache()
    manager = CatalogManager(config("a", "b"), cache=c)  # type: ignore[arg-type]
    manager.open()
    try:
        for name in ("a", "b"):
            store(c, (name, "db", "t"), "k")
        manager.reload(config("a", ro=True), grace=0)  # type: ignore[arg-type]
        assert c.get(("b", "db", "t"), "k") is None  # removed
        assert c.get(("a", "db", "t"), "k") == b"v"  # only a flag changed: the same catalog
        assert "cache" in manager.reload(parse_config(  # type: ignore[arg-type]
            f"server: {{data-dir: {tmp_path}}}\ncatalogs:\n  - {{name: a, type: memory, default: true}}\n"
            "cache: {ttl: 5s}\n"), grace=0).restart_needed
    finally:
        manager.close()


def test_a_write_invalidates_the_same_objects_in_catalogs_on_the_same_metastore():
    cache = MetadataCache(ttl=3600, max_entries=100, max_bytes=10 ** 6)
    cache.share(lambda name: {"main": ["ro"], "ro": ["main"]}.get(name, []))
    for catalog in ("main", "ro", "other"):
        cache.put((catalog, "db", "t"), "k", b"v", cache.token((catalog, "db", "t")))
    cache.invalidate("main", "db", "t")
    assert cache.get(("main", "db", "t"), "k") is None
    assert cache.get(("ro", "db", "t"), "k") is None
    assert cache.get(("other", "db", "t"), "k") == b"v"


def test_the_caching_client_answers_every_call_of_the_typed_client_through_the_wrapped_one() -> None:
    """Every typed call reaches the wrapped client (none the pool ``CachingHiveClient`` has none of)."""

    class Recording:
        def __init__(self) -> None:
            self.called: list[str] = []

        def __getattr__(self, name: str) -> object:
            def call(*args: object, **kwargs: object) -> list[object]:
                self.called.append(name)
                return []
            return call

    calls = sorted(name for name, _ in inspect.getmembers(HiveClient, inspect.isfunction)
                   if not name.startswith("_") and name != "close")
    for cached in (True, False):
        api = Recording()
        client = CachingHiveClient(api, "main", None, cached_reads=cached)  # type: ignore[arg-type]
        for name in calls:
            method = getattr(client, name)
            params = [p for p in inspect.signature(method).parameters.values()
                      if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
            method(*["db" if p.annotation in ("str", str) else MagicMock() for p in params])
        assert api.called == calls


def test_the_catalog_and_its_fresh_view_share_the_session(sales: HiveCatalog, fake: Counting) -> None:
    fresh = sales.fresh()
    assert fresh.session is sales.session and fresh.fresh() is fresh
    sales.get_table("sales", "orders")
    fake.reads.clear()
    fresh.get_table("sales", "orders")
    sales.get_table("sales", "orders")
    assert fake.reads == {"get_table": 1}
    fresh.alter_table("sales", "orders", TableUpdate(set_properties={"k": "v"}))  # invalidates for both
    assert sales.get_table("sales", "orders").properties["k"] == "v"
