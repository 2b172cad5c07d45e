"""Reading a configuration file: YAML text in, a validated :class:`~catalogd.config.models.Config` out."""

from __future__ import annotations

import importlib.resources
import logging
import os
import stat
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from catalogd.config.env import expand_env_at, mask_references
from catalogd.config.models import Config, raw_catalog_problems
from catalogd.config.problems import (
    Loc,
    convert_errors,
    describe,
    known_keys,
    problem,
    raise_problems,
    unknown_key,
)
from catalogd.errors import ConfigError

__all__ = ["default_config_path", "load_config", "parse_config"]

logger = logging.getLogger(__name__)

#: The largest configuration file read (a config with a thousand catalogs is far smaller).
MAX_CONFIG_SIZE = 1 << 20


#: How deeply a configuration may nest. The deepest key is four levels down
#: (``catalogs[0].connection.<key>``); PyYAML composes nodes recursively, so a file nested tens
#: of thousands deep would otherwise end in a RecursionError and a traceback.
MAX_DEPTH = 32


class _TooDeep(Exception):
    """A document nested deeper than MAX_DEPTH: where (the key path) and on which line."""

    def __init__(self, loc: Loc, line: int) -> None:
        super().__init__(loc, line)
        self.loc = loc
        self.line = line


class _Loader(yaml.SafeLoader):
    """A safe YAML loader that notes keys given twice in one mapping and refuses nesting past MAX_DEPTH."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, int, str]] = []
        self._path: list[str | int] = []

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        # PyYAML passes a sequence item's position, a mapping value's key node, or None (a key, the root).
        if parent is None:
            return super().compose_node(parent, index)
        if isinstance(index, int):
            part: str | int = index
        elif isinstance(index, yaml.ScalarNode):
            part = str(index.value)
        else:
            part = "?"
        if len(self._path) >= MAX_DEPTH:
            raise _TooDeep(tuple(self._path), parent.start_mark.line + 1)  # where the deepest level began
        self._path.append(part)
        try:
            return super().compose_node(parent, index)
        finally:
            self._path.pop()

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            try:
                key = self.construct_object(key_node, deep=True)
                hash(key)
            except (yaml.YAMLError, TypeError):
                continue
            line = key_node.start_mark.line + 1
            if key in seen:
                self.duplicates.append((line, seen[key], str(key)))
            else:
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _load_yaml(text: str, source: str) -> tuple[object, list[str]]:
    """The parsed document and the problems found (a syntax error leaves the document None)."""
    loader = _Loader(text)
    try:
        data = loader.get_single_data()
    except _TooDeep as exc:
        # The key it starts under names it well enough; all 32 levels of the path would not help.
        return None, [problem(source, exc.loc[:3], f"line {exc.line}: nested more than {MAX_DEPTH} levels deep "
                                                   "(a configuration needs a few)")]
    except RecursionError:  # pragma: no cover - MAX_DEPTH stops composing first; a last guard
        return None, [f"{source}: invalid YAML: nested too deeply"]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = ": ".join(part for part in (exc.context, exc.problem) if part)
        # A constructor's error (an unknown tag such as !!python/..., an unhashable key) is in a
        # document that composed: name the key it is under, not only its line.
        loc: Loc = ()
        if isinstance(exc, yaml.constructor.ConstructorError) and mark is not None:
            loc = _key_at(text, mark.line + 1, mark.column + 1)
        return None, [problem(source, loc, f"{where}invalid YAML: {what}")]
    except yaml.YAMLError as exc:
        return None, [f"{source}: invalid YAML: {exc}"]
    finally:
        loader.dispose()
    problems = [
        f"{source}: line {line}: duplicate key '{key}' (already given on line {first})"
        for line, first, key in loader.duplicates
    ]
    if data is None:
        problems.append(f"{source}: the configuration is empty: expected at least a 'catalogs' section")
    elif not isinstance(data, dict):
        problems.append(f"{source}: expected a mapping of sections at the top level, got {describe(data)}")
    return data, problems


def _key_at(text: str, line: int, column: int) -> Loc:
    """The key path of the value at ``line``, ``column`` (from 1) of ``text``; () when none can be told.

    A position inside a mapping's key names the mapping (the key itself may be what is wrong).
    """
    loader = _Loader(mask_references(text))
    try:
        root = loader.get_single_node()
    except (yaml.YAMLError, _TooDeep, RecursionError):
        return ()
    finally:
        loader.dispose()
    position = (line - 1, column - 1)

    def holds(node: yaml.Node) -> bool:
        start = (node.start_mark.line, node.start_mark.column)
        end = (node.end_mark.line, node.end_mark.column)
        return start <= position < end or start == position

    loc: list[str | int] = []
    node = root
    while node is not None:
        inner: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if holds(key):
                    break
                if holds(value):
                    loc.append(str(key.value) if isinstance(key, yaml.ScalarNode) else "?")
                    inner = value
                    break
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                if holds(item):
                    loc.append(index)
                    inner = item
                    break
        node = inner
    return tuple(loc)


def _env_problems(text: str, source: str) -> tuple[str, list[str]]:
    """The text with variables expanded, and each unset or malformed one as a problem naming its key."""
    expanded, found = expand_env_at(text)
    return expanded, [problem(source, _key_at(text, line, column), f"line {line}: {message}")
                      for line, column, message in found]


def parse_config(text: str, source: str = "<string>") -> Config:
    """Validate the text of a configuration file.

    Raises:
        ConfigError: with every problem found, each as ``<source>: <key path>: <problem>``.
    """
    expanded, problems = _env_problems(text, source)
    if problems:
        raise_problems(problems)
    data, problems = _load_yaml(expanded, source)
    if not isinstance(data, dict):
        raise_problems(problems)
    fields = {key: value for key, value in data.items() if key != "source"}
    late: list[str] = []
    if "source" in data:  # a field of Config, but one only the loader sets
        late.append(problem(source, (), unknown_key("source", known_keys(Config))))
    try:
        config = Config.model_validate({**fields, "source": source})
    except ValidationError as exc:
        problems.extend(convert_errors(exc, source, Config))
        for message in raw_catalog_problems(fields.get("catalogs")):
            line = problem(source, ("catalogs",), message)
            if line not in problems:
                problems.append(line)
        raise_problems(problems + late)
    if problems or late:
        raise_problems(problems + late)
    logger.debug(
        "configuration from %s: %d catalog(s), default %r",
        source,
        len(config.catalogs),
        config.default_catalog.name,
    )
    return config


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a configuration file.

    Raises:
        ConfigError: the file cannot be read, is not a regular file (a FIFO, a device, a
            directory) or is larger than ``MAX_CONFIG_SIZE``, or its content is not a valid
            configuration.
    """
    source = str(path)
    data = _read_config_file(source)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not a UTF-8 text file ({exc.reason})", problems=None) from None
    logger.debug("loading configuration from %s", source)
    return parse_config(text, source=source)


def _read_config_file(source: str) -> bytes:
    """The bytes of a regular file of at most MAX_CONFIG_SIZE bytes; anything else refused at once."""
    try:
        # Non-blocking, so that opening a FIFO with no writer returns instead of waiting for one.
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigError(f"{source}: no such configuration file", problems=None) from None
    except IsADirectoryError:
        raise ConfigError(f"{source}: is a directory, not a configuration file", problems=None) from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}", problems=None) from None
    info = os.fstat(fd)
    problem = None
    if stat.S_ISDIR(info.st_mode):
        problem = "is a directory, not a configuration file"
    elif not stat.S_ISREG(info.st_mode):
        problem = f"is a {_file_kind(info.st_mode)}, not a regular file: give a configuration file"
    elif info.st_size > MAX_CONFIG_SIZE:
        problem = f"is {info.st_size} bytes; a configuration file may have at most {MAX_CONFIG_SIZE}"
    if problem is not None:
        os.close(fd)
        raise ConfigError(f"{source}: {problem}", problems=None)
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as f:
        try:
            # One byte more than allowed: a file that grew since fstat is caught too.
            data = f.read(MAX_CONFIG_SIZE + 1)
        except OSError as exc:
            raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}", problems=None) from None
    if len(data) > MAX_CONFIG_SIZE:
        raise ConfigError(f"{source}: a configuration file may have at most {MAX_CONFIG_SIZE} bytes", problems=None)
    return data


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def default_config_path() -> Path:
    """The configuration file to use when none is given.

    ``$CATALOGD_CONFIG`` when set, else ``conf/catalogd.yaml`` below the current
    directory when it exists, else the default packaged with catalogd.
    """
    from_env = os.environ.get("CATALOGD_CONFIG")
    if from_env:
        return Path(from_env).expanduser()
    local = Path.cwd() / "conf" / "catalogd.yaml"
    if local.is_file():
        return local
    # Package data of the top-level package (pyproject: package-data catalogd = ["default.yaml"]);
    # catalogd is installed as plain files, never zipped, so the resource is a real path.
    return Path(str(importlib.resources.files("catalogd").joinpath("default.yaml")))
