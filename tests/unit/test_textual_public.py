"""The console uses Textual's public API: no private name of a Textual or rich class, bar three hooks."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pgtop_ha

ROOT = Path(pgtop_ha.__file__).parent
# Textual has no public hook for these: what a frame draws of a partial update, an input thread
# that sleeps (its own driver needs Textual's parser), and keeping a crash's traceback off the
# terminal (it goes to a 0600 report file).
ALLOWED = {
    ("BandCompositor", "_dirty_regions"),
    ("BandCompositor", "_get_renders"),
    ("MonitorScreen", "_compositor"),
    ("PgtopApp", "_handle_exception"),
    ("PgtopApp", "_exit_renderables"),
}
PRIVATE_MODULES = {"textual._compositor", "textual._parser", "textual._xterm_parser"}


def _own_private_uses(node: ast.ClassDef) -> set[str]:
    """Names ``self._x`` or ``super()._x`` that a class's code reads or sets."""
    out = set()
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Attribute) or not sub.attr.startswith("_") or sub.attr.startswith("__"):
            continue
        owner = sub.value
        is_self = isinstance(owner, ast.Name) and owner.id == "self"
        is_super = (
            isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"
        )
        if is_self or is_super:
            out.add(sub.attr)
    return out


def _library_privates(cls: type) -> set[str]:
    """Private names Textual's and rich's classes in ``cls``'s bases define or set."""
    names: set[str] = set()
    for base in cls.__mro__[1:]:
        if (base.__module__ or "").split(".")[0] not in ("textual", "rich"):
            continue
        names |= {n for n in vars(base) if n.startswith("_") and not n.startswith("__")}
        try:
            names |= set(re.findall(r"self\.(_[a-z][a-z0-9_]*)", inspect.getsource(base)))
        except (OSError, TypeError):
            continue
    return names


def test_no_class_uses_a_private_name_of_its_textual_bases() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text())
        module = None
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or not (used := _own_private_uses(node)):
                continue
            if module is None:
                module = importlib.import_module(
                    ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
                )
            cls = getattr(module, node.name, None)
            if not inspect.isclass(cls):
                continue
            found += [(node.name, name) for name in used & _library_privates(cls)]
    assert set(found) <= ALLOWED, sorted(set(found) - ALLOWED)
    assert ("KeyedTable", "_data") not in found  # the table draws its own lines


def test_ui_reads_no_private_name_of_another_object() -> None:
    # ``table._data``, ``screen._bindings``: a private name read off an object that is not self.
    pattern = re.compile(r"(?<!self)(?<!cls)(?<!super\(\))\.(_[a-z][a-z0-9_]*)\b")
    found = []
    for path in sorted((ROOT / "ui").rglob("*.py")):
        for line in path.read_text().splitlines():
            words = line.split()
            if words[:1] == ["#"] or (words[:1] == ["from"] and words[1] in PRIVATE_MODULES):
                continue
            found += [f"{path.name}: {match.group(0)}" for match in pattern.finditer(line)]
    assert found == []
