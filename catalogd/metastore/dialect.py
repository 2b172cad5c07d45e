"""Which HMS calls a metastore of a newer version no longer answers, and how to say them in its dialect.

HMS 4.0.1 removed ``get_table`` and ``get_table_objects_by_name`` (HIVE-26537): a Hive 2.3
client (catalogd's own, Spark 4's built-in one) is answered ``Invalid method name`` for them.
Their ``*_req`` variants, which HMS 2.3, 3.1 and 4.x all answer, ask the same and answer the
same tables inside a result struct (``GetTableResult.table``, ``GetTablesResult.tables``).

Nothing is probed up front: a backend's dialect is learnt from its first ``UNKNOWN_METHOD``
answer to an old call (``Dialect.learn``) and kept for that backend, so a 2.3 or 3.1 metastore
is asked exactly as before and an HMS 4 costs one refused call per old method, once.

Two users: ``catalog.hive_api.HiveClient`` (typed calls, ``typed_call``) and the HMS endpoint's
relay (``catalogd.hms.backend_dialect``, whole Thrift messages, through ``request_args`` and
``old_result``). The HMS 4.0.1 service also lacks the 2.3 index calls (``add_index``,
``get_indexes``, ...): they have no equivalent and stay ``UNKNOWN_METHOD``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from thrift.Thrift import TApplicationException

from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms

__all__ = ["REPLACEMENTS", "Dialect", "is_unknown_method", "old_result", "request_args", "typed_call"]

#: The old call -> the call a backend that lacks it answers instead.
REPLACEMENTS: dict[str, str] = {
    "get_table": "get_table_req",
    "get_table_objects_by_name": "get_table_objects_by_name_req",
}


def is_unknown_method(error: BaseException) -> bool:
    """Whether ``error`` is a metastore's ``Invalid method name`` answer."""
    return isinstance(error, TApplicationException) and error.type == TApplicationException.UNKNOWN_METHOD


class Dialect:
    """The old calls one backend (one metastore service) has been found to lack (thread-safe)."""

    def __init__(self) -> None:
        self._lacking: set[str] = set()
        self._lock = threading.Lock()

    def lacks(self, method: str) -> bool:
        with self._lock:
            return method in self._lacking

    def learn(self, method: str) -> None:
        """The backend answered ``method`` with ``UNKNOWN_METHOD``: say it in the new dialect from now on."""
        with self._lock:
            self._lacking.add(method)

    @property
    def lacking(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._lacking)


def request_args(method: str, args: Any) -> Any:
    """The ``*_args`` struct of ``REPLACEMENTS[method]`` asking what ``args`` (``<method>_args``) asks."""
    if method == "get_table":
        return ThriftHiveMetastore.get_table_req_args(req=hms.GetTableRequest(dbName=args.dbname,
                                                                              tblName=args.tbl_name))
    if method == "get_table_objects_by_name":
        return ThriftHiveMetastore.get_table_objects_by_name_req_args(
            req=hms.GetTablesRequest(dbName=args.dbname, tblNames=list(args.tbl_names or [])))
    raise KeyError(method)


def old_result(method: str, result: Any) -> tuple[Any, BaseException | None]:
    """The ``<method>_result`` struct answering as ``result`` (a ``REPLACEMENTS[method]`` result)
    does; second, an exception the old call has no field for (the caller says it another way)."""
    if method == "get_table":
        table = result.success.table if result.success is not None else None
        return ThriftHiveMetastore.get_table_result(success=table, o1=result.o1, o2=result.o2), None
    if method == "get_table_objects_by_name":
        # HMS 2.3's call declares no exception: an error comes as an application error.
        undeclared = result.o1 or result.o2 or result.o3
        tables = list(result.success.tables or []) if result.success is not None else None
        return ThriftHiveMetastore.get_table_objects_by_name_result(success=tables), undeclared
    raise KeyError(method)


def _typed_args(method: str, args: tuple[Any, ...]) -> Any:
    return getattr(ThriftHiveMetastore, f"{method}_args")(*args)


def typed_call(dialect: Dialect, call: Callable[..., Any], method: str, args: tuple[Any, ...]) -> Any:
    """Run ``call(method, *args)`` (one typed RPC: the value of its result's ``success``), in the
    backend's dialect: a call it lacks is made as its ``REPLACEMENTS`` call, and its answer
    unpacked to the old call's. The old call's own exceptions pass through; an exception only
    the new call declares is raised as it came."""
    if method not in REPLACEMENTS:
        return call(method, *args)
    if not dialect.lacks(method):
        try:
            return call(method, *args)
        except TApplicationException as e:
            if not is_unknown_method(e):
                raise
            dialect.learn(method)
    new_args = request_args(method, _typed_args(method, args))
    answer = call(REPLACEMENTS[method], new_args.req)
    result_type = getattr(ThriftHiveMetastore, f"{REPLACEMENTS[method]}_result")
    result, _ = old_result(method, result_type(success=answer))
    return result.success
