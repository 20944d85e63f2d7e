"""The repository's plugins/ folder is the package netsched.plugins, with no link to trip over.

Installed, setup.py maps the folder to netsched/plugins (the wheel's contents are
checked in tests/integration/test_packaging.py); from a source tree, netsched's
__init__ registers the tree's own folder.  mypy cannot map a folder to another
package name (python/mypy#10564), so it checks plugins/ as the package `plugins`:
inside plugins/, modules reach each other by relative imports, which mean the same
under both names.
"""

from __future__ import annotations

import ast
import runpy
from pathlib import Path
from typing import Any

import pytest
import setuptools

import netsched.plugins
import netsched.plugins.registry

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"


def test_there_is_no_netsched_plugins_link_or_folder() -> None:
    link = ROOT / "netsched" / "plugins"
    assert not link.is_symlink() and not link.exists(), f"{link}: plugins live in plugins/ only"


def test_from_the_source_tree_netsched_plugins_is_the_plugins_folder() -> None:
    assert list(netsched.plugins.__path__) == [str(PLUGINS)]
    assert Path(netsched.plugins.registry.__file__ or "") == PLUGINS / "registry.py"


def _setup_arguments(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    got: dict[str, Any] = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: got.update(kw))
    monkeypatch.chdir(ROOT)  # setup.py finds packages relative to the project root, as pip runs it
    runpy.run_path(str(ROOT / "setup.py"))
    return got


def test_setup_maps_the_folder_and_installs_every_package_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    args = _setup_arguments(monkeypatch)
    assert args["package_dir"] == {"netsched.plugins": "plugins"}
    packages = set(args["packages"])
    folders = {
        ".".join(("netsched", *init.parent.relative_to(ROOT).parts)) for init in PLUGINS.rglob("__init__.py")
    }
    assert folders <= packages, sorted(folders - packages)
    assert "netsched.plugins.network_traffic" in packages and "netsched" in packages
    assert not [p for p in packages if p.split(".")[0] != "netsched"], "no top-level package but netsched"


def test_plugins_import_their_own_modules_relatively() -> None:
    absolute = []
    for path in sorted(PLUGINS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            bad = [n for n in names if n == "netsched.plugins" or n.startswith("netsched.plugins.")]
            absolute += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in bad]
    assert absolute == [], "use a relative import (mypy sees plugins/ as `plugins`): " + str(absolute)
