"""HMS 3's catalog calls on the endpoint: catalogd's catalogs listed and described, never made.

``get_catalogs`` lists catalogd's catalogs (those the caller may read); ``get_catalog`` answers
``hive`` (what Hive 3+ clients send by default: the default catalog's door, the view a Hive 2.3
client has) and every catalogd catalog, by the name as asked, with a description naming its
type and its warehouse as ``locationUri`` where it has one. Catalogs are configured in
catalogd's YAML: ``create_catalog``, ``alter_catalog`` and ``drop_catalog`` are refused and
change nothing. The structs are the IDL's (``Catalog``, ``GetCatalogResponse``, ...), looked up
by name: they exist once the endpoint's IDL has Hive 3's calls. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from catalogd.errors import UnsupportedError
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.catalog_names import HIVE
from catalogd.hms.refused import Refused, meta_error

if TYPE_CHECKING:
    from catalogd.catalog.base import Catalog

__all__ = ["METHODS", "REFUSED", "answer"]

#: Calls that change catalogs: refused (catalogs live in the YAML).
REFUSED = frozenset({"create_catalog", "alter_catalog", "drop_catalog"})
METHODS = frozenset({"get_catalogs", "get_catalog"}) | REFUSED


def answer(method: str, args: Any, catalogs: Mapping[str, Catalog], default: str,
           readable: Callable[[str], bool], location: Callable[[Catalog], str | None]) -> Any:
    """The success value of a catalog call.

    Args:
        catalogs: catalogd's catalogs by name.
        default: the default catalog's name.
        readable: whether the caller may see a catalog.
        location: a catalog's warehouse (None: it has none).

    Raises:
        Refused: an unknown catalog (NoSuchObjectException), or a call that would change catalogs.
    """
    if method in REFUSED:
        raise meta_error(f"catalogd: {method} refused: catalogs are configured in catalogd's YAML "
                         "(catalogs:), not made or changed through the HMS API; nothing was changed", UnsupportedError)
    if method == "get_catalogs":
        return hms.GetCatalogsResponse(names=sorted(name for name in catalogs if readable(name)))
    request = getattr(args, "catName", None)
    asked = getattr(request, "name", None) or ""
    lowered = asked.lower()
    name = default if lowered == HIVE else next((n for n in catalogs if n.lower() == lowered), "")
    found = catalogs.get(name) if name else None
    if found is None or not readable(name):
        raise Refused(hms.NoSuchObjectException(message=f"catalogd: no catalog {asked!r}; the catalogs are: "
                                                        f"{', '.join(sorted([HIVE, *catalogs]))}"))
    kind = found.info().type
    if lowered == HIVE:
        others = sorted(n for n in catalogs if n != default)
        description = (f"catalogd's default catalog {default!r} ({kind})"
                       + (f", with the databases of {', '.join(others)} under their prefixes" if others else ""))
    else:
        description = f"catalogd catalog {name!r} ({kind})" + (" (the default)" if name == default else "")
    catalog = hms.Catalog(name=asked, description=description, locationUri=location(found))
    return hms.GetCatalogResponse(catalog=catalog)
