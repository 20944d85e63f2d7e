"""The objects a kustomize directory renders to, without kustomize, for tests of deploy/.

`kubectl kustomize` is not on every machine the tests run on, so the tests read
the kustomizations themselves. Only what deploy/ and grafana/ use is rendered,
the way kustomize renders it: `resources` (files and directories, recursively),
the kustomization's `namespace`, and `configMapGenerator` with `files` under
`generatorOptions` and per-generator `options` (labels, annotations,
immutable). Anything else in a generator is refused with its field path, and so
is a generator whose name kustomize would suffix with a content hash (every one
here sets `disableNameSuffixHash`): a bare name would be silently wrong.
tests/unit/test_deploy.py and test_testing_kustomize.py compare the result with
`kubectl kustomize` where it is installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

# Kinds kustomize's `namespace` leaves alone (cluster-scoped).
CLUSTER_KINDS = frozenset(
    {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "CustomResourceDefinition"}
)


class KustomizeError(ValueError):
    """A kustomization this renderer cannot render faithfully; the message names the file and field."""


def load_kustomization(path: str | Path) -> list[Obj]:
    """The objects of a kustomize directory, in the order its fields list them
    (kustomize sorts its output; compare by kind, namespace and name)."""
    root = Path(path)
    file = root / "kustomization.yaml"
    kustomization = yaml.safe_load(file.read_text()) or {}
    default_ns = kustomization.get("namespace")
    objects: list[Obj] = []
    for entry in kustomization.get("resources") or []:
        target = root / entry
        objects += load_kustomization(target) if target.is_dir() else list(_documents(target))
    objects += _generated_config_maps(file, kustomization)
    for obj in objects:
        meta = obj.setdefault("metadata", {})
        if default_ns and obj.get("kind") not in CLUSTER_KINDS:
            meta["namespace"] = default_ns
    return objects


def find_object(path: str | Path, kind: str, name: str) -> Obj:
    """The one object of `kind` named `name` in the kustomize directory `path`."""
    found = [
        o for o in load_kustomization(path) if o.get("kind") == kind and o["metadata"].get("name") == name
    ]
    if len(found) != 1:
        raise LookupError(f"{path}: {len(found)} {kind} objects named {name!r}, expected one")
    return found[0]


def _generated_config_maps(file: Path, kustomization: Obj) -> Iterator[Obj]:
    shared = kustomization.get("generatorOptions") or {}
    for i, generator in enumerate(kustomization.get("configMapGenerator") or []):
        where = f"{file}: configMapGenerator[{i}]"
        unsupported = set(generator) - {"name", "namespace", "behavior", "files", "options"}
        if unsupported:
            raise KustomizeError(f"{where}: {sorted(unsupported)} not rendered by netsched.testing.kustomize")
        if generator.get("behavior", "create") != "create":
            raise KustomizeError(f"{where}.behavior: only create is rendered")
        name = generator.get("name")
        if not name:
            raise KustomizeError(f"{where}.name: required")
        local = generator.get("options") or {}
        # kustomize merges the two: the generator's own labels/annotations win, flags are or-ed.
        if not (shared.get("disableNameSuffixHash") or local.get("disableNameSuffixHash")):
            raise KustomizeError(
                f"{where} ({name}): kustomize would suffix the name with a content hash, which this "
                "renderer does not compute; set disableNameSuffixHash"
            )
        meta: Obj = {"name": name}
        if generator.get("namespace"):
            meta["namespace"] = generator["namespace"]
        labels = {**(shared.get("labels") or {}), **(local.get("labels") or {})}
        annotations = {**(shared.get("annotations") or {}), **(local.get("annotations") or {})}
        if labels:
            meta["labels"] = labels
        if annotations:
            meta["annotations"] = annotations
        config_map: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
        data = _data(file.parent, where, generator)
        if data:
            config_map["data"] = data
        if shared.get("immutable") or local.get("immutable"):
            config_map["immutable"] = True
        yield config_map


def _data(root: Path, where: str, generator: Obj) -> dict[str, str]:
    data: dict[str, str] = {}
    for j, entry in enumerate(generator.get("files") or []):
        key, sep, source = str(entry).partition("=")
        if not sep:
            key, source = Path(entry).name, entry
        target = (root / source).resolve()
        # kustomize's default load restrictor: a kustomization reads files under its own root only.
        if not target.is_relative_to(root.resolve()):
            raise KustomizeError(f"{where}.files[{j}]: {source} is not in or below {root}")
        if key in data:
            raise KustomizeError(f"{where}.files[{j}]: key {key!r} is already set")
        data[key] = target.read_text(encoding="utf-8")
    return data


def _documents(path: Path) -> Iterator[Obj]:
    for doc in yaml.safe_load_all(path.read_text()):
        if doc:
            yield doc
