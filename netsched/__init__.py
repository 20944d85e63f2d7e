"""netsched: a Kubernetes scheduler that places pods by measured node load as well as requests.

The public entry points, for a binary with out-of-tree plugins:

    import netsched
    netsched.main(netsched.with_plugin(MyPlugin))

Both are looked up on first use, so `import netsched` (or any submodule) stays
cheap and does not pull in the command line or the plugin registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netsched.cli import main
    from netsched.framework.registry import with_plugin

__all__ = ["main", "with_plugin"]


def __getattr__(name: str) -> Any:
    if name == "main":
        from netsched.cli import main

        return main
    if name == "with_plugin":
        from netsched.framework.registry import with_plugin

        return with_plugin
    raise AttributeError(f"module 'netsched' has no attribute {name!r}")
