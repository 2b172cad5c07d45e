"""Generated reference pages of the docs site: configuration, CLI and HTTP API.

mkdocs runs this file as a hook (``hooks:`` in mkdocs.yml). A page that holds the line
``<!-- generated: config -->`` (or ``cli``, ``http``) gets it replaced, at build time, by markdown
made from the code itself:

- ``config``: the pydantic models of ``catalogd/config/models.py`` (every key, its type, its
  default, and the ``#:`` comment above the field);
- ``cli``: the click app of ``catalogd/cli/`` (every command, its usage, arguments and options);
- ``http``: the OpenAPI document of the FastAPI app in ``catalogd/server/http_app.py``;
- ``hms_writes``: every write method of the HMS endpoint with its location rule
  (``catalogd/hms/rules.py``).

So the reference cannot drift from the code: a key, a flag or a route added there shows on
the site at the next ``make docs``. ``python docs/hooks/reference.py config|cli|http`` prints one.
"""

from __future__ import annotations

import ast
import datetime
import enum
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MARKER = re.compile(r"^<!-- generated: (\w+) -->$", re.M)


def _html_safe(text: str) -> str:
    """``<`` outside code spans as ``&lt;``, so that ``<data-dir>`` is not taken for an HTML tag."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if part.startswith("`") else part.replace("<", "&lt;") for part in parts)


def _cell(text: str) -> str:
    """Text fit for one cell of a markdown table."""
    return _html_safe(" ".join(str(text).split()).replace("|", "\\|"))


# --- configuration -------------------------------------------------------------------------


def _field_comments(module: types.ModuleType) -> dict[tuple[str, str], str]:
    """(class, field) -> the ``#:`` comment lines just above the field, joined."""
    source = inspect.getsource(module)
    lines = source.splitlines()
    found: dict[tuple[str, str], str] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                comment: list[str] = []
                n = item.lineno - 2
                while n >= 0 and lines[n].strip().startswith("#:"):
                    comment.insert(0, lines[n].strip()[2:].strip())
                    n -= 1
                if comment:
                    found[(node.name, item.target.id)] = " ".join(comment)
    return found


def _rst_to_md(text: str) -> str:
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _type_name(annotation: Any) -> str:
    from pydantic import BaseModel, SecretStr

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (types.UnionType, typing.Union):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or null" if type(None) in args else "")
    if origin is typing.Literal:
        return " | ".join(f"`{a}`" for a in args)
    if origin in (list, tuple):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return "map of string to string" if args == (str, str) else "map"
    if annotation is datetime.timedelta:
        return "duration"
    if annotation is SecretStr:
        return "secret string"
    if annotation is Path:
        return "path"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    return {bool: "boolean", int: "integer", str: "string", float: "number"}.get(annotation, str(annotation))


def _bounds(field: Any) -> str:
    """The numeric bounds of a field (``>= 0``, ``> 0``, ports), from its pydantic metadata."""
    found = []
    for meta in getattr(field, "metadata", []):
        for attr, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            value = getattr(meta, attr, None)
            if value is not None:
                found.append(f"{sign} {value}")
    return ", ".join(found)


def _default(field: Any) -> str:
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    from catalogd.config.durations import format_duration

    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(section)"
    if value is None:
        return "unset"
    if isinstance(value, datetime.timedelta):
        return f"`{format_duration(value)}`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, enum.Enum):
        return f"`{value.value}`"
    if isinstance(value, (list, dict)) and not value:
        return "empty"
    return f"`{value}`"


def _model_of(annotation: Any) -> tuple[type | None, bool]:
    """The model class inside ``annotation`` (``X``, ``X | None``, ``list[X]``) and whether it is a list."""
    from pydantic import BaseModel

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _model_of(args[0])
    if origin in (types.UnionType, typing.Union):
        for arg in args:
            model, many = _model_of(arg)
            if model is not None:
                return model, many
        return None, False
    if origin is list and args:
        model, _ = _model_of(args[0])
        return model, model is not None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None, False


def _sections(model: type, prefix: str) -> Iterator[tuple[str, type]]:
    """(key path, model) of ``model`` and of every section below it, depth first."""
    yield prefix, model
    for name, field in model.model_fields.items():  # type: ignore[attr-defined]
        if field.exclude:
            continue
        sub, many = _model_of(field.annotation)
        if sub is not None:
            key = field.alias or name
            path = f"{prefix}.{key}" if prefix else key
            yield from _sections(sub, path + ("[]" if many else ""))


def _yaml_comments(path: Path) -> dict[str, str]:
    """Key path (``server.port``, ``catalogs[].default-database``) -> its comment in the default
    config file (the keys that are commented out included)."""
    found: dict[str, str] = {}
    section = ""
    for line in path.read_text().splitlines():
        top = re.match(r"^(?:# ?)?([\w-]+):\s*(#.*)?$", line)
        if top and not line.startswith("#  "):
            section = top.group(1)
            continue
        key = re.match(r"^\s*(?:#\s*)?(?:- )?([\w.-]+):[^#]*#\s*(.+)$", line)
        if key and section:
            prefix = f"{section}[]" if section == "catalogs" else section
            found.setdefault(f"{prefix}.{key.group(1)}", key.group(2).strip())
    return found


#: What a key means where neither its model field nor conf/catalogd.yaml says (a unit test
#: fails on a key with no meaning at all, so a new key gets one).
MEANINGS = {
    "catalogs[].name": "The catalog's name: letters, digits, underscores; unique.",
    "catalogs[].type": "`hive` (a Hive Metastore, remote or embedded) or `memory` (in the daemon's memory, "
                       "lost when it stops).",
    "catalogs[].default": "The catalog a name without a catalog means; exactly one (implied when there is "
                          "one catalog).",
    "catalogs[].connection": "Metastore settings: `hive.metastore.uris` (`embedded`, or "
                             "`thrift://h1:9083,thrift://h2:9083`), `hive.metastore.username`, "
                             "`hive.metastore.connect.timeout` (5s), `hive.metastore.client.socket.timeout` (60s).",
    "catalogs[].warehouse": "Where table data goes (optional; an embedded metastore has its own under the data dir).",
    "catalogs[].read-only": "true: every write is refused with permission-denied.",
    "spark.master": "Where refresh jobs run (`spark-submit --master`): `local[2]`, `spark://host:7077`, "
                    "`yarn`, `k8s://...`.",
    "spark.conf": "`--conf` settings of every refresh job.",
    "auth.principals[].name": "The principal's name: letters, digits, `_ . @ -`; unique; `anonymous` and "
                              "`job:...` are reserved.",
    "auth.principals[].token": "Its token (at least 16 characters; use `${VAR}`); excludes `token-file`. "
                               "None and no file: the principal is usable only on the HMS endpoint.",
    "auth.grants[].principal": "A declared principal.",
    "auth.grants[].catalog": "A configured catalog, or `\"*\"` for every catalog.",
    "auth.grants[].role": "`reader` < `writer` < `admin`, each including the ones before it; of several "
                          "grants the highest counts.",
    "auth.audit.max-bytes": "Rotate `audit.jsonl` past this size.",
    "auth.audit.backups": "Rotated files kept (`audit.jsonl.1` ...); 0: none.",
}


def config_reference() -> str:
    """Every configuration key, one table per section, from ``catalogd.config.models``."""
    from catalogd.config import models

    comments = _field_comments(models)
    yaml_comments = _yaml_comments(Path(__file__).resolve().parents[2] / "conf" / "catalogd.yaml")
    out: list[str] = []
    for path, model in _sections(models.Config, ""):
        title = f"`{path}`" if path else "Top level"
        out.append(f"### {title}\n")
        doc = inspect.getdoc(model) or ""
        if doc:
            out.append(_html_safe(_rst_to_md(doc.split("\n\n")[0])) + "\n")
        out.append("| key | type | default | meaning |\n|---|---|---|---|")
        for name, field in model.model_fields.items():  # type: ignore[attr-defined]
            if field.exclude:
                continue
            key = field.alias or name
            full = f"{path}.{key}" if path else key
            kind = _type_name(field.annotation)
            bounds = _bounds(field)
            if bounds:
                kind += f" ({bounds})"
            sub, _ = _model_of(field.annotation)
            meaning = comments.get((model.__name__, name)) or yaml_comments.get(full) or MEANINGS.get(full, "")
            if sub is not None and not meaning:
                meaning = (inspect.getdoc(sub) or "").split("\n\n")[0]
            out.append(f"| `{full}` | {_cell(kind)} | {_cell(_default(field))} | {_cell(_rst_to_md(meaning))} |")
        out.append("")
    return "\n".join(out)


# --- CLI -----------------------------------------------------------------------------------


def _commands(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    import click

    yield path, command
    if isinstance(command, click.Group):
        for name in sorted(command.commands):
            sub = command.commands[name]
            if not sub.hidden:
                yield from _commands(sub, [*path, name])


def cli_reference() -> str:
    """Every command of the ``catalogd`` CLI: usage, help, arguments and options, from click."""
    import click

    from catalogd.cli.app import cli

    out: list[str] = []
    # The commands' own context settings (``-h``): click keeps the help option it first
    # builds for a command, so a context without them would change the CLI's own help.
    root = click.Context(cli, info_name="catalogd", **cli.context_settings)
    for path, command in _commands(cli, ["catalogd"]):
        parent = root
        for name in path[1:]:
            parent = click.Context(command, info_name=name, parent=parent, **command.context_settings)
        ctx = parent if len(path) > 1 else root
        name = " ".join(path)
        anchor = "-".join(["cli", *path[1:]]) if len(path) > 1 else "cli-catalogd"
        level = "###" if len(path) <= 2 else "####"
        out.append(f"{level} `{name}` {{#{anchor}}}\n")
        usage = " ".join([name, *command.collect_usage_pieces(ctx)])
        out.append(f"```text\n{usage}\n```\n")
        help_text = inspect.cleandoc(command.help or "")
        if help_text:
            out.append(_html_safe(help_text.replace("\b\n", "")) + "\n")
        if isinstance(command, click.Group):
            subs = [f"`{s}`" for s in sorted(command.commands) if not command.commands[s].hidden]
            out.append("Commands: " + ", ".join(subs) + ".\n")
        rows = []
        for param in command.get_params(ctx):
            if isinstance(param, click.Argument):
                rows.append(f"| `{param.human_readable_name}` | argument{' (required)' if param.required else ''}"
                            f"{', repeatable' if param.nargs == -1 else ''} | |")
                continue
            record = param.get_help_record(ctx)
            if record is None:
                continue
            flags, text = record
            rows.append(f"| `{_cell(flags)}` | option | {_cell(text)} |")
        if rows:
            out.append("| parameter | kind | help |\n|---|---|---|")
            out.extend(rows)
            out.append("")
    return "\n".join(out)


# --- HTTP API ------------------------------------------------------------------------------


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document the daemon serves at ``GET /v3/openapi.json``."""
    from prometheus_client import CollectorRegistry

    from catalogd.server.http_app import create_app
    from catalogd.server.metrics import Metrics

    class _NoCatalogs:
        def ping(self) -> dict[str, str | None]:
            return {}

    return create_app(_NoCatalogs(), Metrics(CollectorRegistry())).openapi()


def _schema_type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#schema-{name.lower()})"
    if "anyOf" in schema:
        return " or ".join(_schema_type(s) for s in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_schema_type(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        return f"object of {_schema_type(extra) if isinstance(extra, dict) else 'any'}"
    if "enum" in schema:
        return kind + " (" + ", ".join(f"`{v}`" for v in schema["enum"]) + ")"
    return str(kind)


def http_reference() -> str:
    """Every route and model of the OpenAPI document."""
    doc = openapi_document()
    out: list[str] = [f"OpenAPI {doc['openapi']}, *{doc['info']['title']}* {doc['info']['version']}: "
                      f"{doc['info'].get('description', '')}\n"]
    for path, item in doc["paths"].items():
        for method, op in item.items():
            anchor = "http-" + op["operationId"].lower()
            out.append(f"### `{method.upper()} {path}` {{#{anchor}}}\n")
            out.append(f"**{op.get('summary', '')}** (operationId `{op['operationId']}`, "
                       f"tags: {', '.join(op.get('tags', []))})\n")
            if op.get("description"):
                out.append(_html_safe(op["description"]) + "\n")
            params = op.get("parameters", [])
            if params:
                out.append("| parameter | in | type | required | description |\n|---|---|---|---|---|")
                for p in params:
                    out.append(f"| `{p['name']}` | {p['in']} | {_schema_type(p.get('schema', {}))} | "
                               f"{'yes' if p.get('required') else 'no'} | {_cell(p.get('description', ''))} |")
                out.append("")
            body = op.get("requestBody")
            if body:
                for media, content in body.get("content", {}).items():
                    out.append(f"Request body ({media}): {_schema_type(content.get('schema', {}))}.\n")
            out.append("| status | meaning | body |\n|---|---|---|")
            for status, response in op.get("responses", {}).items():
                bodies = [f"{_schema_type(c.get('schema', {}))} ({m})"
                          for m, c in response.get("content", {}).items()]
                out.append(f"| {status} | {_cell(response.get('description', ''))} | {_cell(', '.join(bodies))} |")
            out.append("")
    out.append("### Models\n")
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        out.append(f"#### {name} {{#schema-{name.lower()}}}\n")
        if schema.get("description"):
            out.append(_cell(schema["description"]) + "\n")
        required = set(schema.get("required", []))
        props = schema.get("properties", {})
        if props:
            out.append("| field | type | required | description |\n|---|---|---|---|")
            for field, prop in props.items():
                text = prop.get("description", "")
                if "examples" in prop:
                    text += f" (example: `{prop['examples'][0]}`)"
                out.append(f"| `{field}` | {_cell(_schema_type(prop))} | {'yes' if field in required else 'no'} | "
                           f"{_cell(text)} |")
            out.append("")
    return "\n".join(out)


def hms_writes_reference() -> str:
    """Every write method of the HMS endpoint with its location rule (``catalogd/hms/rules.py``)."""
    from catalogd.hms import methods, rules

    meaning = {
        rules.Rule.NO_FILES: "metadata only: no directory deleted, moved or claimed",
        rules.Rule.CLAIM: "each new or changed location claimed: inside `allowed-locations`, clear of every "
                          "other object's directory; else `MetaException`",
        rules.Rule.DROP: "made by catalogd under its deletion rules; `deleteData=false` keeps every file",
        rules.Rule.MOVE: "refused when the metastore would move a directory outside the table's own",
        rules.Rule.REFUSED: "refused with a `MetaException` (catalogd cannot judge what it would delete or move)",
    }
    writes = sorted(m for m in methods.IDL_METHODS if methods.kind(m) is methods.Kind.WRITE)
    out = ["| method | rule | what catalogd does |", "|---|---|---|"]
    for method in writes:
        rule = rules.rule_of(method)
        label = rule.value if rule is not None else "refused (no rule)"
        what = meaning[rule if rule is not None else rules.Rule.REFUSED]
        out.append(f"| `{method}` | {label} | {_cell(what)} |")
    return "\n".join(out) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {"config": config_reference, "cli": cli_reference,
                                             "http": http_reference, "hms_writes": hms_writes_reference}


def expand(markdown: str) -> str:
    """``markdown`` with each ``<!-- generated: NAME -->`` line replaced by its reference."""
    return MARKER.sub(lambda m: GENERATORS[m.group(1)](), markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """The mkdocs hook: expand the markers of every page."""
    return expand(markdown)


if __name__ == "__main__":
    print(GENERATORS[sys.argv[1]]())
