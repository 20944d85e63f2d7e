"""The core's imports of the plugins are type-checked, not read as Any.

mypy checks the plugins/ folder as the package `plugins` (it cannot map a folder to
netsched.plugins, python/mypy#10564), and `ignore_missing_imports` would make an import of
netsched.plugins.* silently Any.  So each such import in netsched/ is the `else` of an
`if TYPE_CHECKING:` that imports the same module as `plugins.*` for mypy, and pyproject's
override makes an unresolved netsched.plugins.* import an error.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module(node: ast.stmt) -> str:
    if isinstance(node, ast.ImportFrom):
        return node.module or ""
    if isinstance(node, ast.Import):
        return node.names[0].name
    return ""


def _untyped_plugin_imports(path: Path) -> list[int]:
    """Lines of netsched.plugins imports not mirrored by a TYPE_CHECKING `plugins.*` import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mirrored: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            checked = {_module(n) for n in node.body}
            for n in node.orelse:
                if _module(n).removeprefix("netsched.") in checked:
                    mirrored.add(n.lineno)
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        and _module(n).startswith("netsched.plugins")
        and n.lineno not in mirrored
    ]


def test_the_cores_plugin_imports_are_mirrored_for_mypy() -> None:
    found = {
        path.relative_to(ROOT).as_posix(): lines
        for path in sorted((ROOT / "netsched").rglob("*.py"))
        if (lines := _untyped_plugin_imports(path))
    }
    assert found == {}, "imports of netsched.plugins that mypy reads as Any: " + str(found)


def test_an_unresolved_plugin_import_is_a_mypy_error() -> None:
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    strict = [o for o in mypy.get("overrides", []) if o.get("ignore_missing_imports") is False]
    assert any("netsched.plugins.*" in o["module"] for o in strict)


def test_the_checker_sees_an_unmirrored_import(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import plugins.gangs as g\nelse:\n    import netsched.plugins.gangs as g\n"
        "from netsched.plugins.registry import in_tree_plugins\n"
    )
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    assert _untyped_plugin_imports(tmp_path / "m.py") == [6]
