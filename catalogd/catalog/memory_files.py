"""The scratch warehouse of a memory catalog: where its managed tables' files go, and the only place
catalogd ever deletes them from.

A memory catalog has files only once the HMS endpoint serves it (Spark writes them). Every
deletion is confined: the real path (symlinks and ``..`` resolved first) must lie strictly
inside the warehouse, so a table located elsewhere, or a link pointing out, never loses a file.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

logger = logging.getLogger(__name__)

__all__ = ["ScratchWarehouse", "file_uri", "path_of", "strictly_inside"]


def path_of(location: str | None) -> Path | None:
    """The local path of a ``file:`` URI or plain path; None for anything else."""
    if not location:
        return None
    parsed = urlparse(location)
    if parsed.scheme in ("", "file") and (parsed.netloc in ("", "localhost")):
        return Path(unquote(parsed.path))
    return None


def file_uri(path: Path) -> str:
    return f"file://{path}"


def strictly_inside(path: Path, parent: Path) -> bool:
    try:
        return path != parent and bool(path.relative_to(parent).parts)
    except ValueError:
        return False


class ScratchWarehouse:
    """One memory catalog's directory of table files, and the confined file operations on it."""

    def __init__(self, catalog: str, warehouse: Path, *, root: Path | None = None) -> None:
        """``warehouse``: ``<data-dir>/scratch-warehouse/<catalog>``; ``root`` (default its parent's
        parent, the data dir): ``close()`` removes ``warehouse`` only when it lies inside ``root``."""
        self.catalog = catalog
        self.path = Path(os.path.abspath(warehouse))
        self._root = Path(os.path.abspath(root)) if root is not None else self.path.parent.parent

    def database_dir(self, database: str) -> Path:
        return self.path / f"{database.lower()}.db"

    def database_uri(self, database: str) -> str:
        return file_uri(self.database_dir(database))

    def _deletable(self, location: str | None, min_depth: int) -> Path | None:
        """The real path to delete for ``location``, or None: it must lie strictly inside the
        warehouse, ``min_depth`` levels down at least."""
        path = path_of(location)
        if path is None or not path.is_absolute():
            return None
        real = path.resolve()
        warehouse = self.path.resolve()
        if not strictly_inside(real, warehouse) or len(real.relative_to(warehouse).parts) < min_depth:
            if real.exists():
                logger.warning("memory catalog %s: not deleting %s (outside its warehouse %s)",
                               self.catalog, location, warehouse)
            return None
        return real

    def delete(self, location: str | None, min_depth: int = 2) -> None:
        """Delete a table's or partition's files (``min_depth`` 2: never a database directory
        itself unless asked with 1)."""
        real = self._deletable(location, min_depth)
        if real is not None and real.is_dir():
            shutil.rmtree(real, ignore_errors=True)
        elif real is not None and real.is_file():
            real.unlink(missing_ok=True)

    def move(self, old: str, new: str) -> None:
        """Move a managed table's directory along with its rename, when it is ours and the target is free."""
        src, dst = path_of(old), path_of(new)
        if src is None or dst is None:
            return
        if self._deletable(old, 2) is not None and src.is_dir() and not dst.exists():
            src.rename(dst)

    def make_dir(self, location: str | None) -> None:
        """Make a table's or partition's directory, as HMS does (Spark refuses to read a missing path)."""
        path = path_of(location)
        if path is not None and path.is_absolute() and strictly_inside(path.resolve(), self.path.resolve()):
            path.mkdir(parents=True, exist_ok=True)

    def close(self) -> None:
        """Daemon stop: the warehouse goes (only it, and only inside the data dir)."""
        warehouse = self.path
        if warehouse.is_symlink() or not warehouse.is_dir():
            return
        real = warehouse.resolve()
        if not strictly_inside(real, self._root.resolve()):
            logger.warning("memory catalog %s: not removing %s, which is outside %s", self.catalog, real, self._root)
            return
        shutil.rmtree(real, ignore_errors=True)
        logger.info("memory catalog %s: removed its scratch warehouse %s", self.catalog, real)
