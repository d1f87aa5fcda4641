"""Rewrite the generated tables of docs/ from the code (the rule ids of docs/check.md).

.venv/bin/python scripts/docs_tables.py          # rewrite
.venv/bin/python scripts/docs_tables.py --check  # exit 1 when a page drifted
"""

from __future__ import annotations

import ast
import sys
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic_core import PydanticUndefined

from pgtop_ha.judge.rules import RULES
from pgtop_ha.models.thresholds import Band
from pgtop_ha.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "docs" / "check.md"
CONFIGURATION = ROOT / "docs" / "configuration.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
LAYERS = ("models", "judge", "engines", "collect", "record", "serve", "ui", "actions", "lab")
GRAPH_START, GRAPH_END = "<!-- imports: made by scripts/docs_tables.py -->\n", "<!-- /imports -->\n"
CONFIGURATION_HEAD = """# Configuration

Every setting, made from the settings model by `scripts/docs_tables.py` (a test fails when this
page and the model differ). A config file is TOML (`--config PATH`, else
`~/.config/pgtop-ha/config.toml`; never one in the current directory). `PGTOP_HA_<SECTION>__<KEY>`
environment variables override the file (`PGTOP_HA_PG_USER`, `PGTOP_HA_PATRONI`,
`PGTOP_HA_INTERVAL` are short forms), and flags override both. Booleans are 1/0, true/false,
yes/no or on/off, anything else is an error; a number written as text in the file is an error;
an empty variable means unset. A commented example: [config/example.toml](../config/example.toml).
"""
RULES_HEAD = "| rule | means |\n|---|---|\n"


def rules_table() -> str:
    """The rules section's table, one row per rule id."""
    return RULES_HEAD + "".join(f"| `{rule}` | {meaning} |\n" for rule, meaning in RULES.items())


def _type(annotation: Any) -> str:
    """A field's type in a few words."""
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if isinstance(annotation, types.UnionType) or origin is typing.Union:
        return " or ".join(_type(a) for a in args if a is not type(None))
    if origin is typing.Literal:
        return ", ".join(f"`{a}`" for a in args)
    if origin is typing.Annotated:
        return _type(args[0])
    if origin in (tuple, list):
        return f"list of {_type(args[0])}" if args else "list"
    if origin is dict:
        return "table"
    if annotation is Band:
        return "`{ warn = N, crit = N }`"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return ", ".join(f"`{m.value}`" for m in annotation)
    names = {
        str: "text",
        int: "integer",
        float: "number",
        bool: "boolean",
        SecretStr: "secret (environment only)",
    }
    if annotation in names:
        return names[annotation]
    return (
        getattr(annotation, "__name__", str(annotation)).replace("PosixPath", "path").replace("Path", "path")
    )


def _default(info: Any) -> str:
    if info.default is PydanticUndefined:
        return "required" if info.default_factory is None else "empty"
    value = info.default
    if value is None or value == ():
        return "unset"
    if isinstance(value, tuple):
        return ", ".join(f"`{v}`" for v in value)
    if isinstance(value, BaseModel):
        return ", ".join(f"{k} {v:.16g}" for k, v in value.model_dump().items())
    return f"`{str(value).lower() if isinstance(value, bool) else value}`"


def _sections(model: type[BaseModel], at: str, out: list[tuple[str, list[str]]]) -> None:
    rows: list[str] = []
    nested: list[tuple[str, type[BaseModel]]] = []
    for name, info in model.model_fields.items():
        annotation = info.annotation
        inner = typing.get_args(annotation)
        section = next(
            (a for a in (annotation, *inner) if isinstance(a, type) and issubclass(a, BaseModel)), None
        )
        if section is not None and section.__name__ not in ("Band",):
            many = typing.get_origin(annotation) in (tuple, list) or typing.get_origin(annotation) is dict
            nested.append(
                (
                    f"{at}{name}" + ("[]" if many and typing.get_origin(annotation) is not dict else ""),
                    section,
                )
            )
            continue
        what = (info.description or "").replace("|", "\\|")
        rows.append(f"| `{name}` | {_type(annotation)} | {_default(info)} | {what} |")
    out.append((at.rstrip(".") or "(top level)", rows))
    for name, section in nested:
        _sections(section, f"{name}.", out)


def configuration_page() -> str:
    """docs/configuration.md: one table per section of the settings model."""
    sections: list[tuple[str, list[str]]] = []
    _sections(Settings, "", sections)
    parts = [CONFIGURATION_HEAD]
    for title, rows in sections:
        if not rows:
            continue
        name = title if title == "(top level)" else f"[{title}]"
        parts.append(
            f"\n## {name}\n\n| key | type | default | what |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"
        )
    return "".join(parts)


def import_graph() -> str:
    """Which layer imports which, read from the code (imports under TYPE_CHECKING left out)."""
    package = ROOT / "pgtop_ha"
    uses: dict[str, set[str]] = {layer: set() for layer in LAYERS}
    for layer in LAYERS:
        for path in (package / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                    node.body = []
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
                for name in names:
                    parts = name.split(".")
                    if parts[0] == "pgtop_ha" and len(parts) > 1 and parts[1] in uses and parts[1] != layer:
                        uses[layer].add(parts[1])
    lines = ["```mermaid", "flowchart LR"]
    lines += [f"    {a} --> {b}" for a in LAYERS for b in LAYERS if b in uses[a]]
    return "\n".join([*lines, "```"]) + "\n"


def architecture_page(text: str) -> str:
    """docs/architecture.md with its import graph made anew."""
    head, _, rest = text.partition(GRAPH_START)
    _, _, tail = rest.partition(GRAPH_END)
    return head + GRAPH_START + import_graph() + GRAPH_END + tail


def rewritten(text: str) -> str:
    """``text`` (docs/check.md) with its rules table made anew; the table ends the page."""
    return text[: text.index(RULES_HEAD)] + rules_table()


def main() -> int:
    """Rewrite, or with --check say whether the pages match the code."""
    pages = {
        CHECK: rewritten(CHECK.read_text()),
        CONFIGURATION: configuration_page(),
        ARCHITECTURE: architecture_page(ARCHITECTURE.read_text()),
    }
    if "--check" in sys.argv[1:]:
        drifted = [p for p, want in pages.items() if not p.exists() or p.read_text() != want]
        for page in drifted:
            print(f"{page.relative_to(ROOT)} drifted: run scripts/docs_tables.py", file=sys.stderr)
        return 1 if drifted else 0
    for page, want in pages.items():
        page.write_text(want)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
