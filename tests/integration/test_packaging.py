"""What installing netsched puts into site-packages: netsched (with the plugins/ folder as
netsched.plugins, each plugin's README beside its code) and no top-level `plugins` package
to collide with another project's."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
    )
    (whl,) = out.glob("netsched-*.whl")
    with zipfile.ZipFile(whl) as z:
        return z.namelist()


def test_the_wheel_has_no_top_level_plugins_package(wheel_names: list[str]) -> None:
    tops = {name.split("/", 1)[0] for name in wheel_names}
    assert "plugins" not in tops
    assert {t for t in tops if not t.endswith(".dist-info")} == {"netsched"}


def test_every_plugin_module_and_readme_is_installed_under_netsched(wheel_names: list[str]) -> None:
    sources = {
        "netsched/plugins/" + p.relative_to(ROOT / "plugins").as_posix()
        for pattern in ("*.py", "*/README.md")
        for p in (ROOT / "plugins").rglob(pattern)
        if "__pycache__" not in p.parts
    }
    missing = sorted(sources - set(wheel_names))
    assert not missing, missing
    assert "netsched/plugins/registry.py" in wheel_names
    assert "netsched/plugins/network_traffic/README.md" in wheel_names


def test_every_plugin_readme_is_installed_as_package_data(wheel_names: list[str]) -> None:
    """Args and defaults are documented in each plugin's README: an installed netsched (and the
    image, which pip-installs it) has them at importlib.resources.files("netsched.plugins")/<folder>."""
    readmes = {
        "netsched/plugins/" + p.relative_to(ROOT / "plugins").as_posix()
        for p in (ROOT / "plugins").glob("*/README.md")
    }
    assert "netsched/plugins/load_threshold/README.md" in readmes
    missing = sorted(readmes - set(wheel_names))
    assert not missing, missing


def test_the_image_build_context_installs_the_readmes_too(tmp_path: Path) -> None:
    """The Dockerfile pip-installs a copy without .git (pyproject.toml, setup.py, README.md, netsched/,
    plugins/): package data must not depend on git knowing the files."""
    import shutil

    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "netsched", src / "netsched", symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(ROOT / "plugins", src / "plugins", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)],
        check=True,
        capture_output=True,
        text=True,
    )
    (whl,) = out.glob("netsched-*.whl")
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
    assert "netsched/plugins/load_threshold/README.md" in names
    assert "netsched/plugins/load_aware/README.md" in names


def test_plugin_readmes_read_through_importlib_resources() -> None:
    from importlib.resources import files

    text = (files("netsched.plugins") / "load_threshold" / "README.md").read_text()
    assert "cpuUtilizationPercent" in text
