"""grafana/dashboards/*.json checked against Grafana's own dashboard model, with the TypeScript compiler.

Grafana publishes its dashboard model as TypeScript types (@grafana/schema; the Prometheus
query in @grafana/prometheus), pinned in tests/grafana-schema/package-lock.json at the
Grafana kube-prometheus-stack ships. Each dashboard is written out as an object literal of
type NetschedDashboard (tests/grafana-schema/dashboard.ts) and type-checked: a field the model
does not have (misspelt, or a legacy one Grafana would migrate or drop) or a value of the
wrong type fails, named by dashboard and JSON path. Each dashboard also declares the schema
version of that Grafana, so Grafana runs no migration on it.

The toolchain is Node.js plus `npm ci` in tests/grafana-schema (.ci/run does both); without
it the tests fail in CI and skip elsewhere.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
SCHEMA = ROOT / "tests" / "grafana-schema"
TSC = SCHEMA / "node_modules" / "typescript" / "bin" / "tsc"
_DIAGNOSTIC = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+),(?P<col>\d+)\): error (?P<code>TS\d+): (?P<text>.*)$"
)


def node() -> str:
    """The node binary, once the pinned packages are installed; else fail in CI, skip elsewhere."""
    found = shutil.which("node")
    missing = []
    if found is None:
        missing.append("Node.js (node) is not on PATH")
    if not TSC.exists():
        missing.append(f"the pinned packages are not installed: run `npm ci` in {SCHEMA.relative_to(ROOT)}")
    if missing:
        message = (
            "the dashboard schema check needs its toolchain: " + "; ".join(missing) + " (.ci/run does both)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    assert found is not None
    return found


def typescript_literal(value: Any, declaration: str) -> tuple[list[str], list[str]]:
    """`declaration = value;` as TypeScript source lines, and for each line the JSON path it writes."""
    lines: list[str] = []
    paths: list[str] = []

    def emit(v: Any, path: str, prefix: str, suffix: str, depth: int) -> None:
        pad = "  " * depth
        children: list[tuple[str, str, Any]] = []
        if isinstance(v, dict) and v:
            opening, closing = "{", "}"
            children = [(f"{path}.{k}" if path else k, f"{json.dumps(k)}: ", c) for k, c in v.items()]
        elif isinstance(v, list) and v:
            opening, closing = "[", "]"
            children = [(f"{path}[{i}]", "", c) for i, c in enumerate(v)]
        else:
            lines.append(f"{pad}{prefix}{json.dumps(v)}{suffix}")
            paths.append(path)
            return
        lines.append(f"{pad}{prefix}{opening}")
        paths.append(path)
        for i, (child_path, child_prefix, child) in enumerate(children):
            emit(child, child_path, child_prefix, "," if i < len(children) - 1 else "", depth + 1)
        lines.append(f"{pad}{closing}{suffix}")
        paths.append(path)

    emit(value, "", f"{declaration} = ", ";", 0)
    return lines, paths


def type_check(dashboards: dict[str, dict[str, Any]], workdir: Path) -> list[str]:
    """tsc's errors for the dashboards ({name: JSON}), as "name: json.path: TSnnnn message"."""
    node_bin = node()
    header = [f"import type {{ NetschedDashboard }} from {json.dumps(str(SCHEMA / 'dashboard'))};"]
    where: dict[Path, tuple[str, list[str]]] = {}
    for name, dashboard in dashboards.items():
        lines, paths = typescript_literal(dashboard, "export const dashboard: NetschedDashboard")
        source = workdir / f"{Path(name).stem}.ts"
        source.write_text("\n".join(header + lines) + "\n")
        where[source.resolve()] = (name, [""] * len(header) + paths)
    config = workdir / "tsconfig.json"
    config.write_text(
        json.dumps({"extends": str(SCHEMA / "tsconfig.json"), "files": [str(p) for p in where]})
    )
    result = subprocess.run(
        [node_bin, str(TSC), "-p", str(config), "--pretty", "false"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=workdir,
    )
    errors: list[str] = []
    for line in result.stdout.splitlines():
        m = _DIAGNOSTIC.match(line)
        if m is None:
            if errors and line.startswith(" "):
                errors[-1] += " " + line.strip()  # a message's continuation
            continue
        path = (workdir / m["file"]).resolve()
        if path in where:
            name, paths = where[path]
            errors.append(f"{name}: {paths[int(m['line']) - 1] or '(top)'}: {m['code']} {m['text']}")
        else:  # the model itself no longer compiles (a package bump?)
            errors.append(f"{m['file']}({m['line']},{m['col']}): {m['code']} {m['text']}")
    if result.returncode != 0 and not errors:
        errors.append(f"tsc exited {result.returncode}: {result.stdout}{result.stderr}")
    return errors


def test_dashboards_match_grafanas_model(tmp_path: Path) -> None:
    assert DASHBOARDS
    errors = type_check({p.name: json.loads(p.read_text()) for p in DASHBOARDS}, tmp_path)
    assert not errors, "fields Grafana's dashboard model does not have, or of the wrong type:\n" + "\n".join(
        errors
    )


def test_the_check_names_each_defect_by_its_path(tmp_path: Path) -> None:
    """The check can fail, and says where: a copy with the legacy annotation form, a misspelt
    field-config key and an option of the wrong type."""
    dashboard = copy.deepcopy(json.loads(DASHBOARDS[0].read_text()))
    dashboard["annotations"]["list"].append(
        {
            "name": "legacy",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "enable": True,
            "iconColor": "red",
            "expr": "up",
            "step": "1m",
        }
    )
    legacy = len(dashboard["annotations"]["list"]) - 1
    panel = next(i for i, p in enumerate(dashboard["panels"]) if p["type"] == "timeseries")
    dashboard["panels"][panel]["fieldConfig"]["defaults"]["unitt"] = "short"
    dashboard["panels"][panel]["options"]["tooltip"]["mode"] = "several"
    errors = type_check({"broken.json": dashboard}, tmp_path)
    at = sorted(e.split(": ")[1] for e in errors)
    assert at == sorted(
        [
            f"annotations.list[{legacy}].expr",
            f"panels[{panel}].fieldConfig.defaults.unitt",
            f"panels[{panel}].options.tooltip.mode",
        ]
    ), errors


def test_dashboards_declare_the_pinned_grafanas_schema_version() -> None:
    """A lower schemaVersion makes Grafana migrate the dashboard when it loads it."""
    result = subprocess.run(
        [
            node(),
            "--input-type=module",
            "-e",
            "import { defaultDashboard } from '@grafana/schema'; console.log(defaultDashboard.schemaVersion)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=SCHEMA,
    )
    assert result.returncode == 0, result.stderr
    latest = int(result.stdout)
    for path in DASHBOARDS:
        assert json.loads(path.read_text())["schemaVersion"] == latest, path.name
