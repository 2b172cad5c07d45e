"""catalogd's errors as the HMS exceptions a client expects: the one mapping of the HMS endpoint.

Both the router (errors of hive catalogs and of catalogd's own rules) and the memory
metastore (errors of memory catalogs) answer through ``to_hms_error``, so one error reads
the same whichever catalog it comes from. The exception is one the called method declares
in the IDL (its ``_result`` struct's exception fields): an undeclared one would reach the
client as a TApplicationException, or be flattened to a MetaException on the way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from thrift.Thrift import TType

from catalogd.errors import (
    AlreadyExistsError,
    CatalogError,
    DatabaseNotEmptyError,
    InvalidArgumentError,
    NotFoundError,
)
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms

__all__ = ["to_hms_error"]

#: For each kind of error, the HMS exceptions that say it, best first. A bad definition is an
#: InvalidObjectException where the method declares one (create_*, add_partition*), an
#: InvalidOperationException where it declares that instead (alter_*, drop_database); no
#: method declares both.
_CANDIDATES: list[tuple[type[CatalogError], tuple[Callable[..., Exception], ...]]] = [
    (NotFoundError, (hms.NoSuchObjectException,)),
    (AlreadyExistsError, (hms.AlreadyExistsException,)),
    (DatabaseNotEmptyError, (hms.InvalidOperationException,)),
    (InvalidArgumentError, (hms.InvalidObjectException, hms.InvalidOperationException)),
]


@functools.cache
def _declared(method: str) -> frozenset[type]:
    """The exception types ``method``'s result struct declares (none for an unknown method)."""
    result = getattr(ThriftHiveMetastore, f"{method}_result", None)
    spec = getattr(result, "thrift_spec", None) or ()
    return frozenset(s[3][0] for s in spec if s is not None and s[2] != "success" and s[1] == TType.STRUCT)


def to_hms_error(error: CatalogError, method: str) -> Exception:
    """``error`` as the HMS exception ``method`` declares for it; MetaException when it declares none
    that fits (nearly every method declares that one; ``methods.error_result`` handles the rest)."""
    text = f"catalogd: {error.message}"
    declared = _declared(method)
    make: Callable[..., Exception] = hms.MetaException
    for kind, candidates in _CANDIDATES:
        if isinstance(error, kind):
            make = next((c for c in candidates if c in declared), make)
            break
    exc: Exception = make(message=text)
    return exc
