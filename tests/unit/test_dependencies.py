"""The dependency declarations are true: what the code imports is declared, and the constraints
file (which the image and CI's main test run install from) pins every dependency inside the
range pyproject.toml allows.

The floors themselves are kept true by CI (.ci/run), which also installs the lowest versions
pyproject.toml allows into a second virtual environment and runs the unit tests there.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
RUNTIME = [Requirement(r) for r in PROJECT["dependencies"]]
EXTRAS = {name: [Requirement(r) for r in reqs] for name, reqs in PROJECT["optional-dependencies"].items()}


def _declared() -> set[str]:
    reqs = RUNTIME + [r for reqs in EXTRAS.values() for r in reqs]
    return {canonicalize_name(r.name) for r in reqs}


# Our own top-level names: `plugins` is how mypy sees the plugins/ folder (netsched.plugins when
# installed), imported under TYPE_CHECKING where the core names a plugin package's types.
FIRST_PARTY = ("netsched", "plugins", "__future__")


def _third_party_imports() -> dict[str, str]:
    """Top-level module -> the first file importing it, over netsched/ and plugins/."""
    found: dict[str, str] = {}
    for folder in ("netsched", "plugins"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in FIRST_PARTY:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_distribution_is_declared() -> None:
    owners = importlib.metadata.packages_distributions()
    declared = _declared()
    undeclared = []
    for module, where in sorted(_third_party_imports().items()):
        dists = {canonicalize_name(d) for d in owners.get(module, [])}
        assert dists, f"{module} (imported by {where}) is not installed: which distribution provides it?"
        if not dists & declared:
            undeclared.append(f"{module} (imported by {where}) from {sorted(dists)}")
    assert not undeclared, "imported but not declared in pyproject.toml:\n" + "\n".join(undeclared)


def test_every_runtime_dependency_has_a_floor() -> None:
    missing = [str(r) for r in RUNTIME if not any(s.operator in (">=", "~=", "==") for s in r.specifier)]
    assert not missing, f"no lower bound: {missing}"


def _pins(text: str) -> dict[str, Version]:
    """name -> pinned version, for the lines whose markers hold on this interpreter."""
    pins: dict[str, Version] = {}
    for line in text.splitlines():
        if not line or line[0] in "# ":
            continue
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate():
            continue
        (spec,) = req.specifier
        assert spec.operator == "==", f"constraints.txt: {line!r} is not a pin"
        pins[canonicalize_name(req.name)] = Version(spec.version)
    return pins


def test_the_constraints_file_pins_each_dependency_inside_its_range() -> None:
    pins = _pins((ROOT / "constraints.txt").read_text(encoding="utf-8"))
    problems = []
    for req in RUNTIME + [r for reqs in EXTRAS.values() for r in reqs]:
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.append(f"{req.name} is not pinned")
        elif not req.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{req.name}=={pins[name]} is outside {req.specifier}")
    assert not problems, "constraints.txt (regenerate it with the command in its header): " + "; ".join(
        problems
    )


def test_the_image_is_built_from_the_constraints_file() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^COPY\b.*\bconstraints\.txt\b", dockerfile, re.M), "constraints.txt is not copied"
    install = [line for line in dockerfile.splitlines() if "pip install" in line]
    assert install and all("-c constraints.txt" in line for line in install), install
