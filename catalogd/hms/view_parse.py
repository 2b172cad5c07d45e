"""Where view texts are parsed: once per text and mapping, within a time and a depth bound (issue 21).

Parsing a view's text with sqlglot is pure Python and grows with the text: a 5 MB view took
17-25 s, re-parsed on every ``get_table``, and while it ran the garbage collector and the GIL
stalled every other connection. So:

* a rewrite is kept in a bounded cache (``ViewParser.rewrite``), keyed by a hash of the text
  and the mapping (direction, prefix, default database, session-only); callers asking for the
  same rewrite while it runs wait for that one instead of parsing it again;
* texts up to ``INLINE_TEXT`` are parsed in the calling thread (milliseconds); longer ones in a
  worker process (``python -m catalogd.hms.view_text``, which runs ``serve``), so their CPU, memory and collections
  are not the daemon's, and a parse past its deadline is ended by killing the worker;
* nesting deeper than ``MAX_DEPTH`` is refused before parsing (sqlglot's parser recurses);
* no lock is held while a text is parsed: the cache's lock guards dict operations only.

A rewrite that hit a bound carries ``Rewritten.refused``: a create or alter is refused with
it, a read returns the text as stored (``view_text`` logs it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import IO, Any

log = logging.getLogger(__name__)

__all__ = ["CACHE_BYTES", "CACHE_ENTRIES", "INLINE_TEXT", "MAX_DEPTH", "WORKERS", "Request", "Rewritten",
           "ViewParser", "depth_error", "serve"]

#: Texts up to this many characters are parsed in the calling thread (a few milliseconds).
INLINE_TEXT = 16 * 1024
#: The deepest nesting of parentheses and CASE expressions parsed (sqlglot recurses per level and
#: fails near 150 with Python's default recursion limit; real views nest a few levels).
MAX_DEPTH = 64
#: Rewrites kept, and the characters of their texts kept together.
CACHE_ENTRIES = 1024
CACHE_BYTES = 64 * 1024 * 1024
#: Worker processes at most (each parses one text at a time; the endpoint has 2 cores to share).
WORKERS = 2
#: A rewrite that ran out of time is kept this long, so readers of that view do not each spend the
#: whole bound on it again; a later read (a less busy machine) tries again.
FAILED_TTL = 60.0
#: How long a new worker may take to start (import sqlglot) before the parse is given up.
_START_TIMEOUT = 60.0
#: A worker that grew past this (a large text's parse tree) exits after its reply; a new one starts.
_WORKER_MAX_RSS_KIB = 512 * 1024
#: What one cache entry costs beyond its text (the key, the entry, the tuple of names).
_ENTRY_OVERHEAD = 256
_LENGTH = struct.Struct("!I")


@dataclass(frozen=True)
class Request:
    """One text and the mapping to apply to it."""

    text: str
    #: "client": backing names -> the endpoint's; "backing": the inverse.
    direction: str
    prefix: str
    default: str | None = None
    #: Only ``spark_catalog.``-qualified names are the metastore's (a view made in another Spark catalog).
    session_only: bool = False


@dataclass(frozen=True)
class Rewritten:
    """A text's rewrite and what the parse found."""

    text: str
    #: Why the text was left as it was (sqlglot cannot parse it, ...); None: rewritten.
    problem: str | None = None
    #: The statements in the text (a view holds one).
    statements: int = 1
    #: Database names in table and function references that the mapping left alone: for the
    #: "backing" direction, names without the catalog's prefix (another catalog's databases).
    unmapped: tuple[str, ...] = ()
    #: A bound the parse hit (time, depth): a create or alter is refused with this; a read keeps the text.
    refused: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Rewritten:
        return cls(text=str(value["text"]), problem=value.get("problem"), statements=int(value["statements"]),
                   unmapped=tuple(value.get("unmapped") or ()), refused=value.get("refused"))


@dataclass
class _Entry:
    value: Rewritten
    size: int
    #: time.monotonic() after which the entry is stale (None: kept until evicted).
    expires: float | None = None


class ViewParser:
    """Rewrites view texts with a cache, a worker pool and bounds (see the module docstring).

    Args:
        compute: parses and rewrites one text (``view_text.compute``; the worker processes run
            that one whatever is passed here).
        timeout: the longest one parse may take, in seconds (called per use: a config reload
            changes it); also the longest a caller waits for a free worker.
        inline_text, max_depth, cache_entries, cache_bytes, workers: the bounds (tests lower them).
    """

    def __init__(self, compute: Callable[[Request], Rewritten], timeout: Callable[[], float] = lambda: 10.0, *,
                 inline_text: int = INLINE_TEXT,
                 max_depth: int = MAX_DEPTH, cache_entries: int = CACHE_ENTRIES, cache_bytes: int = CACHE_BYTES,
                 workers: int = WORKERS) -> None:
        self._compute = compute
        self._timeout = timeout
        self.inline_text = inline_text
        self.max_depth = max_depth
        self.cache_entries = cache_entries
        self.cache_bytes = cache_bytes
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        self._bytes = 0
        self._running: dict[tuple[Any, ...], threading.Event] = {}
        self._pool = _Pool(workers)
        #: Counters for /metrics and tests: parses (texts parsed: inline + worker), hits, timeouts, refused.
        self._stats = {"parses": 0, "worker_parses": 0, "hits": 0, "timeouts": 0, "refused": 0}

    # ------------------------------------------------------------ public

    def rewrite(self, request: Request) -> Rewritten:
        """The rewrite of ``request``: from the cache, from a parse running for it, or parsed now."""
        key = (hashlib.sha256(request.text.encode("utf-8", "surrogatepass")).digest(), len(request.text),
               request.direction, request.prefix, request.default, request.session_only)
        timeout = self._timeout()
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                found = self._get(key)
                if found is not None:
                    self._stats["hits"] += 1
                    return found
                running = self._running.get(key)
                if running is None:
                    running = self._running[key] = threading.Event()
                    break
            # Another caller parses this text: its result is ours (four readers, one parse).
            if not running.wait(max(0.0, deadline - time.monotonic())):
                return self._timed_out(request.text, timeout, busy=True)
        try:
            result, ttl = self._parse(request, timeout)
            with self._lock:
                self._put(key, result, ttl)
                if result.refused:
                    self._stats["refused"] += 1
            return result
        finally:
            with self._lock:
                del self._running[key]
            running.set()

    def stats(self) -> dict[str, int]:
        """Counters (parses, worker_parses, hits, timeouts, refused) and the cache's entries and bytes."""
        with self._lock:
            return {**self._stats, "entries": len(self._cache), "bytes": self._bytes}

    def clear(self) -> None:
        """Forget every rewrite kept (benchmarks measure a first parse)."""
        with self._lock:
            self._cache.clear()
            self._bytes = 0

    def close(self) -> None:
        """Stop the worker processes (a later parse starts new ones)."""
        self._pool.close()

    # ------------------------------------------------------------ parsing

    def _parse(self, request: Request, timeout: float) -> tuple[Rewritten, float | None]:
        too_deep = depth_error(request.text, self.max_depth)
        if too_deep is not None:
            # Refused before sqlglot sees it: a text of nested parentheses is cheap to send.
            return Rewritten(request.text, problem=too_deep, refused=too_deep), None
        with self._lock:
            self._stats["parses"] += 1
        if len(request.text) <= self.inline_text:
            return self._compute(request), None
        with self._lock:
            self._stats["worker_parses"] += 1
        answer = self._pool.run(request, timeout)
        if isinstance(answer, Rewritten):
            return answer, None
        with self._lock:
            self._stats["timeouts"] += 1
        return self._timed_out(request.text, timeout, busy=answer == "busy"), FAILED_TTL

    def _timed_out(self, text: str, timeout: float, busy: bool) -> Rewritten:
        why = (f"no view parser was free within {timeout:g}s (server.hms-view-parse-timeout)" if busy else
               f"parsing it took longer than {timeout:g}s (server.hms-view-parse-timeout)")
        return Rewritten(text, problem=why, refused=why)

    # ------------------------------------------------------------ cache (self._lock held)

    def _get(self, key: tuple[Any, ...]) -> Rewritten | None:
        entry = self._cache.get(key)
        if entry is None:
            return None
        if entry.expires is not None and time.monotonic() > entry.expires:
            self._drop(key)
            return None
        self._cache.move_to_end(key)
        return entry.value

    def _put(self, key: tuple[Any, ...], value: Rewritten, ttl: float | None) -> None:
        size = len(value.text) + sum(len(n) for n in value.unmapped) + _ENTRY_OVERHEAD
        if size > self.cache_bytes:
            return
        if key in self._cache:
            self._drop(key)
        expires = time.monotonic() + ttl if ttl is not None else None
        self._cache[key] = _Entry(value, size, expires)
        self._bytes += size
        while len(self._cache) > self.cache_entries or self._bytes > self.cache_bytes:
            self._drop(next(iter(self._cache)))

    def _drop(self, key: tuple[Any, ...]) -> None:
        entry = self._cache.pop(key)
        self._bytes -= entry.size


def depth_error(text: str, max_depth: int) -> str | None:
    """Why ``text`` nests too deeply to parse, or None.

    Counts parentheses and CASE ... END outside literals, quoted names and comments (a linear
    scan with one regex: far cheaper than the parse it guards).
    """
    depth = deepest = 0
    for match in _NESTING.finditer(text):
        token = match.group()
        first = token[0]
        if first == "(" or first in "cC":
            depth += 1
            deepest = max(deepest, depth)
        elif first == ")" or first in "eE":
            depth = max(0, depth - 1)
    if deepest > max_depth:
        return f"it nests {deepest} levels deep, over the bound of {max_depth}"
    return None


def _nesting() -> Any:
    import re

    return re.compile(
        r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|--[^\n]*|/\*.*?\*/"  # skipped whole
        r"|[()]|\b(?:case|end)\b",
        re.S | re.I,
    )


_NESTING = _nesting()


# ---------------------------------------------------------------- worker processes


class _Worker:
    """One worker process, speaking length-prefixed JSON on its stdin and stdout."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "catalogd.hms.view_text"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, close_fds=True)
        # Ready once it has imported sqlglot: the parse's deadline starts after that.
        if _read(self.proc.stdout, time.monotonic() + _START_TIMEOUT) is None:
            self.kill()
            raise OSError("the view parser worker did not start")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ask(self, request: Request, deadline: float) -> tuple[Rewritten, bool] | None:
        """The worker's answer and whether it retires after it, or None when no answer came by
        ``deadline`` (the worker is then killed). OSError: the worker was gone before the request."""
        assert self.proc.stdin is not None
        body = json.dumps(asdict(request)).encode()
        try:
            self.proc.stdin.write(_LENGTH.pack(len(body)) + body)
            self.proc.stdin.flush()
        except OSError:
            self.kill()
            raise
        answer = _read(self.proc.stdout, deadline)
        if answer is None:
            self.kill()
            return None
        fields = json.loads(answer)
        return Rewritten.from_json(fields), bool(fields.get("retire"))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def _read(pipe: IO[bytes] | None, deadline: float) -> bytes | None:
    """One length-prefixed message from ``pipe`` by ``deadline`` (None: none came, or EOF)."""
    import select

    assert pipe is not None
    fd = pipe.fileno()
    data = b""
    want = _LENGTH.size
    length: int | None = None
    while True:
        while len(data) < want:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, max(want - len(data), 65536) if length is not None else want - len(data))
            if not chunk:
                return None
            data += chunk
        if length is None:
            length = _LENGTH.unpack(data[:_LENGTH.size])[0]
            data = data[_LENGTH.size:]
            want = length
            continue
        return data


class _Pool:
    """At most ``size`` workers, each lent to one caller at a time; started on first need."""

    def __init__(self, size: int) -> None:
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def run(self, request: Request, timeout: float) -> Rewritten | str:
        """The worker's answer, or "busy" (no worker free within ``timeout``) or "timeout"."""
        if not self._slots.acquire(timeout=timeout):
            return "busy"
        try:
            deadline = time.monotonic() + timeout
            # A second try with a new worker when the first one was gone (it died, or was killed).
            for attempt in (1, 2):
                with self._lock:
                    worker = self._idle.pop() if self._idle else None
                if worker is None or not worker.alive():
                    try:
                        worker = _Worker()
                    except OSError as e:
                        log.warning("view parser worker: %s", e)
                        return "timeout"
                    # The parse's own bound starts once its worker is ready.
                    deadline = max(deadline, time.monotonic() + timeout)
                try:
                    answer = worker.ask(request, deadline)
                except OSError as e:
                    if attempt == 2:
                        log.warning("view parser worker: %s", e)
                        return "timeout"
                    continue
                if answer is None:
                    return "timeout"
                result, retire = answer
                if retire:
                    worker.kill()  # it has exited, or is about to: its memory goes back to the system
                else:
                    with self._lock:
                        self._idle.append(worker)
                return result
            return "timeout"
        finally:
            self._slots.release()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


def serve(compute: Callable[[Request], Rewritten], stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """A worker's loop: a request in, its rewrite out, until stdin closes (the daemon went away)."""
    import resource
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon's Ctrl-C is the daemon's to handle
    import sqlglot  # noqa: F401 (imported before "ready": the first parse's deadline is the parse's)

    stdout.write(_LENGTH.pack(0))
    stdout.flush()
    while True:
        head = stdin.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            return
        body = stdin.read(_LENGTH.unpack(head)[0])
        fields = json.loads(body)
        answer = compute(Request(**fields))
        # Grown past the bound: said in the reply, so the daemon never sends to a worker on its way out.
        retire = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > _WORKER_MAX_RSS_KIB
        out = json.dumps({**answer.to_json(), "retire": retire}).encode()
        stdout.write(_LENGTH.pack(len(out)) + out)
        stdout.flush()
        if retire:
            return  # the daemon starts a fresh one: the parse tree's memory goes back to the system

