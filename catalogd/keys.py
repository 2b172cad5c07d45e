"""The daemon's secret keys: made once under ``<data-dir>/secrets/`` (0700), readable by their owner only (0600)."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from pathlib import Path

from catalogd.errors import ConfigError

logger = logging.getLogger(__name__)

__all__ = ["SECRETS_DIR", "load_key", "private_dir"]

SECRETS_DIR = "secrets"
#: Bytes of randomness in a generated key (written as hex).
_KEY_BYTES = 32
#: A key file is a line of hex; anything much larger is not one of ours.
_MAX_KEY_FILE = 4096


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner can enter (0700), created if needed.

    Raises:
        ConfigError: it cannot be made, or it is not a directory.
    """
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.lstat()
        if not stat.S_ISDIR(info.st_mode):
            raise ConfigError(f"{path} must be a directory (it holds catalogd's secret keys)")
        if stat.S_IMODE(info.st_mode) != 0o700:
            # An older daemon (or a umask) left it open: ours, so close it.
            os.chmod(path, 0o700)
    except OSError as e:
        raise ConfigError(f"cannot prepare the secrets directory {path}: {e.strerror or e}") from e
    return path


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_KEY_FILE:
            raise ConfigError(f"{path} is not a key file (a regular file of at most {_MAX_KEY_FILE} bytes)")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o600)
            logger.warning("%s could be read by other users; its mode is now 0600", path)
        data = os.read(fd, _MAX_KEY_FILE).strip()
    finally:
        os.close(fd)
    if len(data) < 32:
        raise ConfigError(f"{path} holds no key (too short): delete it and catalogd makes a new one")
    return data


def load_key(data_dir: Path, name: str) -> bytes:
    """The key ``<data-dir>/secrets/<name>``, generated (random, 256 bits) the first time.

    Two processes starting at once get the same key: the file appears complete or not
    at all (written aside, then linked into place).

    Raises:
        ConfigError: the key cannot be read or written.
    """
    directory = private_dir(Path(data_dir) / SECRETS_DIR)
    path = directory / name
    try:
        if not path.exists():
            temp = directory / f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, (secrets.token_hex(_KEY_BYTES) + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(temp, path)
                logger.info("generated the key %s", path)
            except FileExistsError:
                pass  # another process was first: use its key
            finally:
                with contextlib.suppress(OSError):
                    temp.unlink()
        return _read(path)
    except OSError as e:
        raise ConfigError(f"cannot read or create the key {path}: {e.strerror or e}") from e
