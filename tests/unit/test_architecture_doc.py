"""docs/architecture.md's layer table against the import graph drawn from the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("models", "judge", "engines", "collect", "record", "serve", "ui", "actions", "lab")


def test_the_layer_table_allows_every_import_the_graph_shows() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    allowed: dict[str, set[str]] = {}
    for line in text.splitlines():
        m = re.match(r"\| `(\w+)/` \| .* \| (.*) \|$", line)
        if m and m[1] in LAYERS:
            allowed[m[1]] = {w for w in re.findall(r"[a-z]+", m[2]) if w in LAYERS}
    edges = re.findall(r"^    (\w+) --> (\w+)$", text, flags=re.M)
    assert set(allowed) == set(LAYERS) and len(edges) > 10
    missing = [f"{a} --> {b}" for a, b in edges if b not in allowed[a]]
    assert not missing, f"the layer table does not allow: {missing}"
