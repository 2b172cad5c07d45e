"""The location index: which objects lie in or around a directory, found without looking at the others."""

from __future__ import annotations

import random

from catalogd.catalog.location_index import LocationIndex
from catalogd.catalog.locations import Location, Occupant, parse


def loc(path: str) -> Location:
    return parse(f"hdfs://nn{path}")


def table(name: str, path: str) -> Occupant:
    return Occupant("table", "db", name, "", loc(path))


def names(found: list[Occupant]) -> list[str]:
    return sorted(o.table or o.database for o in found)


def test_around_finds_the_directory_what_contains_it_and_what_lies_inside_it() -> None:
    index = LocationIndex()
    index.put(("db", ""), [Occupant("database", "db", "", "", loc("/w/db.db"))])
    for name, path in (("a", "/w/db.db/a"), ("ab", "/w/db.db/ab"), ("a_in", "/w/db.db/a/x/y"),
                       ("b", "/w/db.db/b"), ("other_fs", "/w/db.db/a")):
        index.put(("db", name), [table(name, path) if name != "other_fs" else
                                 Occupant("table", "db", name, "", parse("hdfs://other/w/db.db/a"))])
    assert names(index.around(loc("/w/db.db/a"))) == ["a", "a_in", "db"]
    # A sibling whose name starts the same is neither inside nor around.
    assert names(index.around(loc("/w/db.db/ab"))) == ["ab", "db"]
    assert names(index.around(loc("/w/db.db/a/x"))) == ["a", "a_in", "db"]
    assert names(index.around(loc("/w/db.db/new"))) == ["db"]
    assert names(index.around(loc("/"))) == ["a", "a_in", "ab", "b", "db"]
    assert names(index.around(loc("/elsewhere"))) == []


def test_put_replaces_and_remove_forgets_an_objects_directories() -> None:
    index = LocationIndex()
    index.put(("db", "t"), [table("t", "/w/t"), Occupant("partition", "db", "t", "ds=1", loc("/ext/p1"))])
    index.put(("db", "u"), [table("u", "/w/t")])  # two objects on one directory: both found
    assert names(index.around(loc("/w/t"))) == ["t", "u"]
    assert names(index.around(loc("/ext"))) == ["t"]
    index.put(("db", "t"), [table("t", "/w/moved")])
    assert names(index.around(loc("/w/t"))) == ["u"]
    assert names(index.around(loc("/ext"))) == []
    index.remove(("db", "u"))
    assert index.around(loc("/w/t")) == []
    index.remove_database("db")
    assert len(index) == 0 and index.all() == []


def test_around_agrees_with_comparing_every_directory() -> None:
    rng = random.Random(19)
    index = LocationIndex()
    everything = []
    for n in range(400):
        path = "/" + "/".join(rng.choice(["a", "b", "ab", "a-b", "a.b"]) for _ in range(rng.randint(1, 4)))
        occupant = table(f"t{n}", path)
        everything.append(occupant)
        index.put(("db", occupant.table), [occupant])
    for _ in range(200):
        probe = everything[rng.randrange(len(everything))].location if rng.random() < 0.5 else \
            loc("/" + "/".join(rng.choice(["a", "b", "ab"]) for _ in range(rng.randint(1, 3))))
        expected = [o for o in everything if o.location.contains(probe) or probe.contains(o.location)]
        assert names(index.around(probe)) == names(expected)
