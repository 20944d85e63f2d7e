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
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netsched.cli import main
    from netsched.framework.registry import with_plugin

__all__ = ["main", "with_plugin"]


def _source_tree_plugins() -> None:
    """Make plugins/ beside this package netsched.plugins when netsched runs from its source tree.

    pytest's pythonpath ["."], `python -m netsched` and the benchmarks import the tree's
    netsched/, which has no plugins/ inside (the folder is mapped there only when
    installed).  An editable install's import hook would find the package, but it points
    at the tree that was installed, which need not be this one (several worktrees share a
    virtual environment), and there is none in a clone whose dependencies were installed
    without the project.  Registering the folder here makes every run from a tree use
    that tree's plugins (a conftest.py would serve pytest only).  An installed netsched
    has netsched/plugins and is left alone; the pyproject.toml beside the package tells
    a source tree from a site-packages directory.
    """
    here = Path(__file__).resolve().parent
    folder = here.parent / "plugins"
    if (here / "plugins").is_dir() or not (here.parent / "pyproject.toml").is_file():
        return
    spec = importlib.util.spec_from_file_location(
        f"{__name__}.plugins", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"{folder}: the source tree's plugins folder cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    globals()["plugins"] = module  # the attribute the import system sets for a submodule


_source_tree_plugins()


def __getattr__(name: str) -> Any:
    if name == "main":
        from netsched.cli import main

        return main
    if name == "with_plugin":
        from netsched.framework.registry import with_plugin

        return with_plugin
    raise AttributeError(f"module 'netsched' has no attribute {name!r}")
