"""netsched.testing.kustomize: the kustomize subset the deploy/ tests read manifests through.

Where kubectl is installed each case is also rendered by `kubectl kustomize` and must agree;
what the renderer cannot render faithfully (a content-hash name suffix, files outside the
kustomization's folder, generator fields it does not know) is refused with the field's path.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from netsched.testing.kustomize import KustomizeError, load_kustomization


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def kubectl_kustomize(directory: Path) -> list[dict[str, Any]] | None:
    if shutil.which("kubectl") is None:
        return None
    result = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def by_name(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects}


def test_config_map_generator_with_options_in_an_overlay(tmp_path: Path) -> None:
    base = write(
        tmp_path / "base",
        {
            "kustomization.yaml": """
generatorOptions:
  disableNameSuffixHash: true
  labels: {shared: "1", both: shared}
  annotations: {note: shared}
configMapGenerator:
  - name: plain
    files: [files/a.json, renamed.json=files/b.json]
  - name: own-options
    files: [files/a.json]
    options:
      labels: {both: own}
      immutable: true
""",
            "files/a.json": '{"expr": "x > 0.8 & y < 1"}\n',
            "files/b.json": "second\n",
        },
    )
    overlay = write(
        tmp_path / "overlay",
        {"kustomization.yaml": "namespace: ns1\nresources: [../base]\n"},
    )
    got = by_name(load_kustomization(overlay))
    assert got["plain"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "plain",
            "namespace": "ns1",
            "labels": {"shared": "1", "both": "shared"},
            "annotations": {"note": "shared"},
        },
        "data": {"a.json": (base / "files/a.json").read_text(), "renamed.json": "second\n"},
    }
    assert got["own-options"]["metadata"]["labels"] == {"shared": "1", "both": "own"}
    assert got["own-options"]["immutable"] is True
    rendered = kubectl_kustomize(overlay)
    if rendered is not None:
        assert by_name(rendered) == got


@pytest.mark.parametrize(
    ("kustomization", "message"),
    [
        (
            "configMapGenerator:\n  - name: hashed\n    files: [a.json]\n",
            r"configMapGenerator\[0\] \(hashed\): kustomize would suffix the name with a content hash",
        ),
        (
            "generatorOptions: {disableNameSuffixHash: true}\n"
            "configMapGenerator:\n  - name: x\n    files: [../outside.json]\n",
            r"configMapGenerator\[0\]\.files\[0\]: \.\./outside\.json is not in or below",
        ),
        (
            "generatorOptions: {disableNameSuffixHash: true}\n"
            "configMapGenerator:\n  - name: x\n    literals: [a=b]\n",
            r"configMapGenerator\[0\]: \['literals'\] not rendered",
        ),
        (
            "generatorOptions: {disableNameSuffixHash: true}\n"
            "configMapGenerator:\n  - name: x\n    behavior: merge\n    files: [a.json]\n",
            r"configMapGenerator\[0\]\.behavior: only create",
        ),
        (
            "generatorOptions: {disableNameSuffixHash: true}\n"
            "configMapGenerator:\n  - name: x\n    files: [a.json, d/a.json]\n",
            r"configMapGenerator\[0\]\.files\[1\]: key 'a.json' is already set",
        ),
    ],
    ids=["hash-suffix", "outside-root", "literals", "merge", "duplicate-key"],
)
def test_what_it_cannot_render_faithfully_is_refused(
    tmp_path: Path, kustomization: str, message: str
) -> None:
    write(
        tmp_path,
        {"outside.json": "{}", "k/a.json": "{}", "k/d/a.json": "{}", "k/kustomization.yaml": kustomization},
    )
    with pytest.raises(KustomizeError, match=message) as info:
        load_kustomization(tmp_path / "k")
    assert str(tmp_path / "k" / "kustomization.yaml") in str(info.value)
