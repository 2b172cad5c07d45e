"""The HMS Thrift IDL catalogd speaks: hmsclient's Hive 2.3 classes, grown in place to Hive 4's.

hmsclient ships the generated Python code of the Hive 2.3 metastore IDL. Hive 3 and 4 clients
(Trino, Flink's Hive 3.1 connector, HiveServer2, Hive's own ``HiveMetaStoreClient``) send fields
that IDL lacks (``catName`` in requests, ``Database.catalogName``, ...), and methods it lacks
(``get_catalogs``, ``alter_table_req``, ``get_valid_write_ids``, ...). This module reads the
description of Hive 4's IDL that ``make jvm`` builds from Hive's released jar
(``catalogd.hive_idl.build``) and, once per process:

* adds the fields Hive 4 has and 2.3 lacks to every hmsclient struct and method class (a field
  whose id 2.3 already uses keeps its 2.3 meaning: a 2.3 client's bytes decode as before);
* creates the structs, exceptions and method classes 2.3 lacks, in hmsclient's modules, so
  ``ttypes.GetCatalogsResponse`` and ``ThriftHiveMetastore.get_catalogs_args`` exist wherever
  hmsclient is imported;
* gives hmsclient's ``Client`` a method for every Hive 4 call it lacks.

Methods Hive 4 removed (``get_table``, ``get_table_objects_by_name``, the index calls) stay as
2.3 defined them: the IDL is the union of both. Every class reads and writes through its
``thrift_spec`` (the C accelerated codec where the protocol has it), so a new field survives a
decode and an encode by any protocol.

Import ``ttypes`` and ``ThriftHiveMetastore`` from here, not from hmsclient: importing this
module is what applies the overlay.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore, ttypes
from thrift.Thrift import TApplicationException, TException, TMessageType, TType
from thrift.transport import TTransport
from thrift.TRecursive import fix_spec

from catalogd.errors import UnsupportedError
from catalogd.hive_idl.build import build, idl_path, tool_root

__all__ = ["NEW_METHODS", "ThriftHiveMetastore", "hive2_field_ids", "ttypes"]

log = logging.getLogger(__name__)

#: Methods of Hive 4's service that hmsclient's 2.3 IDL lacks (filled by ``_apply``).
NEW_METHODS: set[str] = set()
#: hmsclient class -> the field ids Hive 2.3 gave it (before the overlay grew it).
_HIVE2_IDS: dict[type, frozenset[int]] = {}


def hive2_field_ids(cls: type) -> frozenset[int] | None:
    """The field ids Hive 2.3's IDL gives ``cls``; None for a class Hive 2.3 does not have.

    A Hive 2.3 client skips a field it does not know: an answer meant for every client must
    say what matters in these.
    """
    return _HIVE2_IDS.get(cls)


def _read(self: Any, iprot: Any) -> None:
    if iprot._fast_decode is not None and isinstance(iprot.trans, TTransport.CReadableTransport):
        iprot._fast_decode(self, iprot, [self.__class__, self.thrift_spec])
    else:
        iprot.readStruct(self, self.thrift_spec)


def _write(self: Any, oprot: Any) -> None:
    if oprot._fast_encode is not None:
        oprot.trans.write(oprot._fast_encode(self, [self.__class__, self.thrift_spec]))
    else:
        oprot.writeStruct(self, self.thrift_spec)


class _Struct:
    """Base of the classes this module creates: keyword (or positional, in field order) construction."""

    thrift_spec: tuple[Any, ...] = (None,)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = [s for s in self.thrift_spec if s is not None]
        for spec, value in zip(fields, args, strict=False):
            kwargs.setdefault(spec[2], value)
        for spec in fields:
            setattr(self, spec[2], kwargs.pop(spec[2], spec[4]))
        if kwargs:
            raise TypeError(f"{type(self).__name__} has no field {sorted(kwargs)[0]!r}")

    read = _read
    write = _write

    def validate(self) -> None:
        return None

    def __repr__(self) -> str:
        values = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({values})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__) and self.__dict__ == other.__dict__

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]


class _Exception(TException, _Struct):
    """Base of the exceptions this module creates."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _Struct.__init__(self, *args, **kwargs)

    def __str__(self) -> str:
        return repr(self)


def _type_args(t: dict[str, Any], resolve: Callable[[str], type]) -> tuple[int, Any]:
    """A field type of the JSON description -> (TType, the spec's type arguments)."""
    code = t["t"]
    if code == TType.STRING:
        return code, "BINARY" if t.get("binary") else "UTF8"
    if code == TType.STRUCT:
        return code, [resolve(t["struct"]), None]
    if code in (TType.LIST, TType.SET):
        elem = _type_args(t["elem"], resolve)
        return code, (elem[0], elem[1], False)
    if code == TType.MAP:
        key, value = _type_args(t["key"], resolve), _type_args(t["value"], resolve)
        return code, (key[0], key[1], value[0], value[1], False)
    return code, None


def _same_type(a: Any, b: Any) -> bool:
    """Two spec entries' types match (struct classes by name: hmsclient's and ours are one by then)."""
    if a[1] != b[1]:
        return False
    if a[1] == TType.STRING:
        return True
    return repr(a[3]) == repr(b[3])


def _spec(fields: list[dict[str, Any]], resolve: Callable[[str], type]) -> dict[int, tuple[Any, ...]]:
    out = {}
    for f in fields:
        code, targs = _type_args(f["type"], resolve)
        out[f["id"]] = (f["id"], code, f["name"], targs, f["default"])
    return out


def _as_tuple(entries: dict[int, tuple[Any, ...]]) -> tuple[Any, ...]:
    # The codecs index a spec by field id; ids below zero never occur in Hive's IDL.
    size = max(entries, default=0) + 1
    return tuple(entries.get(i) for i in range(size))


def _merge(cls: type, new: dict[int, tuple[Any, ...]]) -> int:
    """Add ``new``'s fields that ``cls`` (an hmsclient class) lacks; returns how many were added."""
    old = {s[0]: s for s in getattr(cls, "thrift_spec", None) or () if s is not None}
    _HIVE2_IDS.setdefault(cls, frozenset(old))
    names = {s[2] for s in old.values()}
    added = 0
    for fid, entry in new.items():
        if fid in old or entry[2] in names:
            # 2.3's meaning of an id stays: a 2.3 client's bytes decode as they always did.
            continue
        old[fid] = entry
        # Instances made by hmsclient's __init__ lack the attribute: the class default answers.
        setattr(cls, entry[2], entry[4])
        added += 1
    if added:
        cls.thrift_spec = _as_tuple(old)  # type: ignore[attr-defined]
        cls.read = _read  # type: ignore[attr-defined]
        cls.write = _write  # type: ignore[attr-defined]
        extra = {e[2]: e[4] for e in old.values() if e[2] not in names}
        cls.__init__ = _init_with(cls.__init__, extra)  # type: ignore[misc]
    return added


def _init_with(init: Callable[..., None], extra: dict[str, Any]) -> Callable[..., None]:
    """hmsclient's ``__init__`` taking the added fields as keywords too.

    Every added field is set on the instance, as a decode sets it: hmsclient's ``__eq__``
    compares instances' ``__dict__``, so a struct built here equals the same struct decoded.
    """

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        more = {k: kwargs.pop(k, default) for k, default in extra.items()}
        init(self, *args, **kwargs)
        for k, v in more.items():
            setattr(self, k, v)

    return __init__


def _client_method(name: str) -> Callable[..., Any]:
    args_cls = getattr(ThriftHiveMetastore, f"{name}_args")
    result_cls = getattr(ThriftHiveMetastore, f"{name}_result", None)

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._oprot.writeMessageBegin(name, TMessageType.CALL, self._seqid)
        args_cls(*args, **kwargs).write(self._oprot)
        self._oprot.writeMessageEnd()
        self._oprot.trans.flush()
        if result_cls is None:
            return None
        iprot = self._iprot
        _, mtype, _ = iprot.readMessageBegin()
        if mtype == TMessageType.EXCEPTION:
            error = TApplicationException()
            error.read(iprot)
            iprot.readMessageEnd()
            raise error
        result = result_cls()
        result.read(iprot)
        iprot.readMessageEnd()
        for spec in result.thrift_spec:
            if spec is not None and spec[2] != "success" and getattr(result, spec[2], None) is not None:
                raise getattr(result, spec[2])
        if getattr(result, "success", None) is not None or not any(
            s is not None and s[2] == "success" for s in result.thrift_spec
        ):
            return getattr(result, "success", None)
        raise TApplicationException(TApplicationException.MISSING_RESULT, f"{name} failed: unknown result")

    call.__name__ = name
    return call


def _apply(idl: dict[str, Any]) -> None:
    for enum_name, values in idl["enums"].items():
        enum = getattr(ttypes, enum_name, None)
        if enum is None:
            enum = type(enum_name, (), {})
            setattr(ttypes, enum_name, enum)
        names = dict(getattr(enum, "_VALUES_TO_NAMES", {}))
        for name, value in values.items():
            setattr(enum, name, int(value))
            names.setdefault(int(value), name)
        setattr(enum, "_VALUES_TO_NAMES", names)  # noqa: B010 (the class may be one made just above)
        setattr(enum, "_NAMES_TO_VALUES", {v: k for k, v in names.items()})  # noqa: B010

    created: dict[str, type] = {}
    for name, struct in idl["structs"].items():
        if getattr(ttypes, name, None) is None:
            base = _Exception if struct["kind"] == "exception" else _Struct
            cls = type(name, (base,), {"__module__": ttypes.__name__})
            setattr(ttypes, name, cls)
            created[name] = cls
    for name in idl["service"]:
        if getattr(ThriftHiveMetastore, name, None) is None:
            cls = type(name, (_Struct,), {"__module__": ThriftHiveMetastore.__name__})
            setattr(ThriftHiveMetastore, name, cls)
            created[name] = cls

    def resolve(struct_name: str) -> type:
        found = getattr(ttypes, struct_name, None)
        if not isinstance(found, type):
            raise UnsupportedError(f"the Hive metastore IDL names an unknown struct {struct_name}")
        return found

    added = 0
    for source, module in ((idl["structs"], ttypes), (idl["service"], ThriftHiveMetastore)):
        for name, described in source.items():
            fields = described["fields"] if isinstance(described, dict) else described
            entries = _spec(fields, resolve)
            cls = getattr(module, name)
            if name in created:
                cls.thrift_spec = _as_tuple(entries)
            else:
                added += _merge(cls, entries)

    # Every spec names a nested struct by [class, its thrift_spec]; the codecs follow the second,
    # so each must point at the grown spec, as hmsclient's own fix_spec did for the 2.3 ones.
    fix_spec([c for module in (ttypes, ThriftHiveMetastore) for c in vars(module).values()
              if isinstance(c, type) and isinstance(getattr(c, "thrift_spec", None), tuple)])

    for name in sorted(n[:-5] for n in idl["service"] if n.endswith("_args")):
        if not hasattr(ThriftHiveMetastore.Client, f"send_{name}") and not hasattr(ThriftHiveMetastore.Client, name):
            NEW_METHODS.add(name)
            setattr(ThriftHiveMetastore.Client, name, _client_method(name))
    log.debug("Hive metastore IDL overlay: %d classes created, %d fields added, %d methods added",
              len(created), added, len(NEW_METHODS))


def _load() -> None:
    path = idl_path()
    if not path.is_file() and (root := tool_root()) is not None:
        # A checkout that has not run `make jvm` since the IDL came in builds it once (~20 s),
        # as the Spark plugin's jar is built on first use.
        build(root, path)
    try:
        idl = json.loads(path.read_text())
    except FileNotFoundError:
        raise UnsupportedError(
            f"the Hive 4 metastore IDL ({path}) is not built: run `make jvm` in the catalogd checkout"
        ) from None
    _apply(idl)


_load()
