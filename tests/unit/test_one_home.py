"""One home per domain rule: a second definition of a rule fails here, before it can drift.

The rules live in models/: Patroni's role names in models/roles.py; WAL positions, rates and
presence in models/derive.py; who leads in models/leader.py. This test reads every module of the
package (its syntax tree, not its text) and fails when a rule is defined again elsewhere.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pgtop_ha

PACKAGE = Path(pgtop_ha.__file__).parent
ROLES_HOME = PACKAGE / "models" / "roles.py"

# Role names that only Patroni's role vocabulary uses: spelling one out is defining a rule.
ROLE_ONLY_NAMES = {"standby_leader", "sync_standby", "quorum_standby"}
LEADER_WORDS = {"leader", "primary", "master"}

# Each rule's one definition: function name -> module (relative to the package) that holds it.
RULES = {
    "is_leader_role": "models/roles.py",
    "is_sync_role": "models/roles.py",
    "is_standby_leader": "models/roles.py",
    "wal_position": "models/derive.py",
    "reference_lsn": "models/derive.py",
    "standby_lag_bytes": "models/derive.py",
    "lag_bytes": "models/derive.py",
    "node_rates": "models/derive.py",
    "slot_rates": "models/derive.py",
    "copy_rates": "models/derive.py",
    "copy_estimate": "models/derive.py",
    "slot_presence": "models/derive.py",
    "permanent_slots": "models/derive.py",
    "permanent_slot_names": "models/derive.py",
    "segments_behind": "models/derive.py",
    "is_leader": "models/leader.py",
    "binary_size": "models/numbers.py",
    "leader_of": "judge/checks.py",
    "writes_ok": "judge/checks.py",
    "server_mark": "judge/routing.py",
    "pool_mark": "judge/routing.py",
}


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(PACKAGE.rglob("*.py"))]


def _strings(node: ast.AST) -> set[str]:
    return {e.value for e in ast.walk(node) if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _role_findings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each role name spelt out and each literal list of leader roles."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in ROLE_ONLY_NAMES:
            found.append((node.lineno, repr(node.value)))
        elif isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            words = _strings(node) & LEADER_WORDS
            if "leader" in words and len(words) > 1:
                found.append((node.lineno, "a list of leader roles"))
    return found


def test_role_names_are_spelt_only_in_their_home() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {what}"
        for path, tree in _modules()
        if path != ROLES_HOME
        for line, what in _role_findings(tree)
    ]
    assert not found, "use pgtop_ha.models.roles instead:\n" + "\n".join(found)


def test_each_rule_is_defined_once_in_its_home() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in RULES:
                where[node.name].append(str(path.relative_to(PACKAGE)))
    wrong = {name: places for name, places in where.items() if places != [RULES[name]]}
    missing = sorted(set(RULES) - set(where))
    assert not wrong and not missing, f"second or misplaced definitions: {wrong}; missing: {missing}"


def test_the_scanner_sees_a_copied_role_list() -> None:
    tree = ast.parse('LEADERS = {"leader", "master"}\nROLE = "sync_standby"\nPOOLS = ("primary", "master")\n')
    assert _role_findings(tree) == [(1, "a list of leader roles"), (2, "'sync_standby'")]
    assert _role_findings(ast.parse(ROLES_HOME.read_text()))  # the home itself spells them
