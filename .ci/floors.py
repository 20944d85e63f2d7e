"""Check that the lowest-versions job installed the floors pyproject.toml declares.

`uv pip install --resolution lowest-direct` takes the lowest version of each direct dependency
that the whole set allows; when another package needs more (kubernetes 37 asks for urllib3 2.8),
or the floor was never published, the job silently tests a higher version than the one declared.
This script fails the job instead, naming each dependency whose installed version is not its floor.
Run it with the lowest environment's interpreter from the repository root.
"""

from __future__ import annotations

import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version

from packaging.requirements import Requirement
from packaging.version import Version


def declared(pyproject: dict[str, object]) -> list[Requirement]:
    """The direct requirements: the core dependencies and every extra's."""
    project = pyproject["project"]
    assert isinstance(project, dict)
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        reqs.extend(Requirement(r) for r in extra)
    return reqs


def floor(req: Requirement) -> Version | None:
    """The version after `>=`, if the requirement declares one."""
    floors = [Version(s.version) for s in req.specifier if s.operator == ">="]
    return max(floors) if floors else None


def mismatches(reqs: list[Requirement]) -> list[str]:
    out = []
    for req in reqs:
        want = floor(req)
        if want is None:
            continue
        try:
            got = Version(version(req.name))
        except PackageNotFoundError:
            out.append(f"{req.name}: declared >={want}, not installed")
            continue
        if got != want:
            out.append(f"{req.name}: declared >={want}, installed {got}")
    return out


def main() -> int:
    with open("pyproject.toml", "rb") as f:
        bad = mismatches(declared(tomllib.load(f)))
    for line in bad:
        print(f"floors: {line}", file=sys.stderr)
    if bad:
        print(
            "floors: the lowest job does not test these floors; raise them to what installs", file=sys.stderr
        )
        return 1
    print("floors: every declared floor is the installed version")
    return 0


if __name__ == "__main__":
    sys.exit(main())
