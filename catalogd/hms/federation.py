"""Which catalog a database name on the HMS endpoint belongs to, and back.

The default catalog's databases keep their names; every other catalog's database ``db``
appears as ``<prefix>db`` (``hms-prefix``, default ``<catalog>__``). The config refuses
prefixes where one starts with another, so a name belongs to at most one prefixed catalog;
a name with no catalog prefix belongs to the default catalog (unless that has a prefix too).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from catalogd.config import Config, hms_prefix_of

__all__ = ["Federation", "Place", "matches_pattern"]


@dataclass(frozen=True)
class Place:
    """A database as its catalog knows it."""

    catalog: str
    database: str


class Federation:
    """The name mapping for one configuration.

    Args:
        prefixes: catalog name -> its prefix ('' keeps names as they are).
        default: the default catalog's name.
    """

    def __init__(self, prefixes: dict[str, str], default: str) -> None:
        self.prefixes = dict(prefixes)
        self.default = default
        # Longest first: with 'a__' and 'a__b__' refused by the config this is only tidiness.
        self._prefixed = sorted(((p, c) for c, p in prefixes.items() if p), key=lambda pc: -len(pc[0]))

    @classmethod
    def from_config(cls, config: Config) -> Federation:
        return cls({c.name: hms_prefix_of(c) for c in config.catalogs}, config.default_catalog.name)

    def locate(self, name: str) -> Place | None:
        """The catalog and database a client's database name means (None: no catalog has it)."""
        lowered = name.lower()
        for prefix, catalog in self._prefixed:
            if lowered.startswith(prefix):
                rest = lowered[len(prefix):]
                return Place(catalog, rest) if rest else None
        if self.prefixes.get(self.default, ""):
            return None
        return Place(self.default, lowered)

    def client_name(self, catalog: str, database: str) -> str:
        """What clients call ``database`` of ``catalog``."""
        return self.prefixes.get(catalog, "") + database

    def visible(self, catalog: str, database: str) -> bool:
        """Whether the database can be reached by its client name (a default-catalog database
        whose name starts with another catalog's prefix cannot: the prefix wins)."""
        place = self.locate(self.client_name(catalog, database))
        return place is not None and place == Place(catalog, database.lower())

    def unprefix(self, catalog: str) -> _Renamer:
        """Client name -> the catalog's own name (for names the router already located)."""
        return _Renamer(self.prefixes.get(catalog, ""), strip=True)

    def prefix(self, catalog: str) -> _Renamer:
        """The catalog's own name -> client name."""
        return _Renamer(self.prefixes.get(catalog, ""), strip=False)


class _Renamer:
    def __init__(self, prefix: str, strip: bool) -> None:
        self.prefix = prefix
        self.strip = strip

    def __call__(self, name: str) -> str:
        if not self.prefix or name is None:
            return name
        if self.strip:
            return name[len(self.prefix):] if name.lower().startswith(self.prefix) else name
        return self.prefix + name


def matches_pattern(name: str, pattern: str | None) -> bool:
    """HMS's name patterns: ``*`` any run of characters, ``|`` alternatives, case-insensitive.

    (HMS 2.3 ``MetaStoreUtils`` / ObjectStore also accept a ``.``-free regex subset; ``*`` and
    ``|`` are what clients send.)
    """
    if pattern is None or pattern in ("", "*"):
        return True
    lowered = name.lower()
    for alternative in pattern.lower().split("|"):
        alternative = alternative.strip()
        if not alternative:
            continue
        if fnmatch.fnmatchcase(lowered, alternative.replace("[", "[[]").replace(".*", "*")):
            return True
        try:
            if re.fullmatch(alternative.replace("*", ".*") if ".*" not in alternative else alternative, lowered):
                return True
        except re.error:
            continue
    return False
