"""A relayed call in the dialect of the metastore behind a catalog, and its answer back in the client's.

Spark 4's built-in Hive 2.3 client asks ``get_table`` and ``get_table_objects_by_name``, which
an HMS 4.0.1+ no longer answers (HIVE-26537: ``Invalid method name``). Relayed to such a
backend, the call is re-sent as its ``*_req`` call (``catalogd.metastore.dialect`` says which
and how) and the reply re-encoded as the old call's reply, with the client's method name and
sequence id: everything above the relay (the metadata cache, name rewriting, catalogd's rules,
its own reads of the current table) sees the call the client made.

What a backend lacks is learnt from its first ``UNKNOWN_METHOD`` answer and kept per backend
(``Upstreams`` holds one ``Dialect`` per relay pool); a backend that answers the old call is
relayed to exactly as before. The other direction (a Hive 3/4 client's ``*_req`` calls on an
HMS 2.3) is not this module's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from thrift.Thrift import TApplicationException

from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.metastore.dialect import REPLACEMENTS, Dialect, old_result, request_args
from catalogd.metastore.messages import CALL, EXCEPTION, REPLY, Message, decode, encode, parse_message

logger = logging.getLogger(__name__)

__all__ = ["relay_in_dialect"]


def _unknown_method(reply: Message) -> bool:
    if reply.type != EXCEPTION:
        return False
    error = decode(TApplicationException(), reply.body)
    return bool(error.type == TApplicationException.UNKNOWN_METHOD)


def relay_in_dialect(dialect: Dialect, send: Callable[[bytes], Message], request: bytes, backend: str) -> Message:
    """Relay one call message (``send``: to the backend, its reply) in the backend's dialect.

    Args:
        dialect: what this backend lacks (learnt here, kept by the caller per backend).
        send: sends a whole call message, returns the backend's reply message.
        request: the call as the client sent it.
        backend: names the backend in the log (``catalog main``).

    Returns:
        The reply as the backend sent it, or, for a call re-said, the old call's reply made of it.
    """
    call = parse_message(request)
    method = call.name
    if method not in REPLACEMENTS:
        return send(request)
    if not dialect.lacks(method):
        reply = send(request)
        if not _unknown_method(reply):
            return reply
        dialect.learn(method)
        logger.info("HMS endpoint: the metastore of %s has no %s; relaying it as %s from now on",
                    backend, method, REPLACEMENTS[method])
    new_method = REPLACEMENTS[method]
    args = decode(getattr(ThriftHiveMetastore, f"{method}_args")(), call.body)
    reply = send(encode(new_method, CALL, call.seqid, request_args(method, args)))
    if reply.type == EXCEPTION:
        # An application error (the backend failed): the client's method name on it.
        return parse_message(encode(method, EXCEPTION, call.seqid, decode(TApplicationException(), reply.body)))
    if reply.type != REPLY:
        return reply
    result, undeclared = old_result(method, decode(getattr(ThriftHiveMetastore, f"{new_method}_result")(),
                                                   reply.body))
    if undeclared is not None:
        # The old call declares no such exception: a 2.3 client reads an application error.
        message = getattr(undeclared, "message", None) or type(undeclared).__name__
        error = TApplicationException(TApplicationException.INTERNAL_ERROR,
                                      f"{type(undeclared).__name__}: {message}")
        return parse_message(encode(method, EXCEPTION, call.seqid, error))
    return parse_message(encode(method, REPLY, call.seqid, result))
