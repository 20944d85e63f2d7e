"""netsched: a Kubernetes scheduler that places pods by measured node load as well as requests.

The public entry points, for a binary with out-of-tree plugins:

    import netsched
    netsched.main(netsched.with_plugin(MyPlugin))

Both are looked up on first use, so `import netsched` (or any submodule) stays
cheap and does not pull in the command line or the plugin registry.

The plugins are the package `netsched.plugins`, kept in the repository's top-level
plugins/ folder: an installed netsched has them at netsched/plugins (setup.py maps
the folder there), and a source tree gets them from _source_tree_plugins() below.
"""

from __future__ import annotations

import importlib.util
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netsched.cli import main
    from netsched.framework.registry import with_plugin

__all__ = ["main", "with_plugin"]


class _SourceTreePlugins:
    """Finds plugins/ beside this package as netsched.plugins when netsched runs from its source tree.

    pytest's pythonpath ["."], `python -m netsched` and the benchmarks import the tree's
    netsched/, which has no plugins/ inside (the folder is mapped there only when
    installed).  An editable install's import hook would find the package, but it points
    at the tree that was installed, which need not be this one (several worktrees share a
    virtual environment), and there is none in a clone whose dependencies were installed
    without the project.  This finder (first on sys.meta_path, answering for that one name
    only, and only when it is imported: `import netsched` stays cheap) makes every run
    from a tree use that tree's plugins; its subpackages are then found through the
    package's __path__ as usual.  An installed netsched has netsched/plugins and gets no
    finder; the pyproject.toml beside the package tells a source tree from site-packages.
    """

    def __init__(self, name: str, folder: Path) -> None:
        self.name = name
        self.folder = folder

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(
            fullname, self.folder / "__init__.py", submodule_search_locations=[str(self.folder)]
        )


def _source_tree_plugins() -> None:
    here = Path(__file__).resolve().parent
    if (here / "plugins").is_dir() or not (here.parent / "pyproject.toml").is_file():
        return
    sys.meta_path.insert(0, _SourceTreePlugins(f"{__name__}.plugins", here.parent / "plugins"))


_source_tree_plugins()


def __getattr__(name: str) -> Any:
    if name == "main":
        from netsched.cli import main

        return main
    if name == "with_plugin":
        from netsched.framework.registry import with_plugin

        return with_plugin
    raise AttributeError(f"module 'netsched' has no attribute {name!r}")
