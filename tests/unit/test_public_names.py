"""One home per public name: no class or function name is defined at the top of two netsched modules.

Two `EventRecorder`s (a Protocol and the kube implementation) or two `Series` (a Prometheus
result and an Event series) make a reader, a grep and an import completion guess which one
is meant. The check reads the source with `ast` (nothing is imported) and looks at top-level
`class` and `def` statements whose name does not start with "_"; module constants and type
aliases are not counted.

The plugin folders are not walked: each plugin is its own package, and like kube's plugin
folders they share method-shaped names (`compute`, `score_rows`) on purpose.  The packages
the plugins share (plugins/gangs, plugins/volumes, installed as netsched.plugins.*) are: the
core imports them, so a name there repeated in netsched/ is the same confusion.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from netsched.cli import SUBCOMMANDS

ROOT = Path(__file__).resolve().parents[2]
# netsched/ and the shared plugin packages (a plugin's own folder is not a shared home).
WALKED = [ROOT / "netsched", ROOT / "plugins" / "gangs", ROOT / "plugins" / "volumes"]

# `netsched NAME` imports the subcommand's module and calls its parser() and main(): a module
# interface cli.py reaches by name, so those two names repeat in cli.py and in each of them.
SUBCOMMAND_INTERFACE = {
    name: {"netsched/cli.py", *(m.replace(".", "/") + ".py" for m in SUBCOMMANDS.values())}
    for name in ("main", "parser")
}
# Repeats left for another branch to remove, each with who removes it; a listed name that no
# longer repeats fails test_allowed_repeats_are_still_needed, so the list only shrinks.
TEMPORARY: dict[str, set[str]] = {}


def _public_defs(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [n.name for n in tree.body if isinstance(n, kinds) and not n.name.startswith("_")]


def _homes() -> dict[str, set[str]]:
    homes: dict[str, set[str]] = defaultdict(set)
    for path in sorted(p for package in WALKED for p in package.rglob("*.py")):
        for name in _public_defs(path):
            homes[name].add(path.relative_to(ROOT).as_posix())
    return homes


def _repeated() -> dict[str, set[str]]:
    return {name: files for name, files in _homes().items() if len(files) > 1}


def test_no_public_name_has_two_homes() -> None:
    allowed = {**SUBCOMMAND_INTERFACE, **TEMPORARY}
    offenders = {
        name: sorted(files) for name, files in _repeated().items() if not files <= allowed.get(name, set())
    }
    assert offenders == {}, "public names defined in more than one module (rename one side): " + str(
        offenders
    )


def test_allowed_repeats_are_still_needed() -> None:
    repeated = _repeated()
    stale = {name: sorted(files) for name, files in TEMPORARY.items() if repeated.get(name) != files}
    assert stale == {}, "TEMPORARY entries that no longer repeat exactly so: remove them"


def test_the_checker_sees_a_repeat(tmp_path: Path) -> None:
    # The walk reads top-level defs only: a method or a private helper of the same name is not a home.
    source = "class Reply:\n    def main(self) -> None: ...\n\ndef _hidden() -> None: ...\n\nasync def fetch() -> None: ...\n"
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    assert _public_defs(tmp_path / "m.py") == ["Reply", "fetch"]


def test_the_shared_plugin_packages_are_walked() -> None:
    homes = _homes()
    assert "plugins/gangs/manager.py" in homes["GangManager"]
    assert any(f.startswith("plugins/volumes/") for files in homes.values() for f in files)
