"""The daemon's data dir and the lock that keeps a second daemon out of it."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from catalogd.errors import ConflictError


class DataDirLock:
    """An exclusive ``flock`` on ``<data-dir>/catalogd.lock``, held while the daemon runs.

    The kernel drops the lock when the process dies, even by SIGKILL, so a
    crashed daemon never blocks the next one.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / "catalogd.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Raises:
        ConflictError: another process holds the lock.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ConflictError(
                f"data dir {self.data_dir} is in use by another catalogd (pid {holder}); "
                "stop that daemon or set server.data-dir to another directory"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> DataDirLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
