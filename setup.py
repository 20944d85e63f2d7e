"""The package list and the one mapping pyproject.toml cannot say: plugins/ is netsched.plugins.

Every plugin lives in the top-level plugins/ folder (one folder each), yet is imported
as `netsched.plugins.<folder>` and installed under netsched/, so site-packages gets no
top-level `plugins` package to collide with another project's.  setuptools maps the
package to the folder (package_dir) for the wheel, the sdist and an editable install;
the packages are found on disk here because pyproject.toml can only list them by hand,
and a plugin folder missing from a hand-written list would silently not be installed.
Everything else about the build is in pyproject.toml.
"""

from setuptools import find_namespace_packages, find_packages, setup

PLUGINS = "plugins"  # the folder installed as the package netsched.plugins

setup(
    package_dir={"netsched.plugins": PLUGINS},
    packages=[
        # netsched.examples holds only YAML (package data read with importlib.resources).
        *find_namespace_packages(include=["netsched", "netsched.*"], exclude=["*.__pycache__"]),
        "netsched.plugins",
        *(f"netsched.plugins.{name}" for name in find_packages(PLUGINS)),
    ],
)
