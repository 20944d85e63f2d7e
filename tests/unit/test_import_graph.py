"""The shape of the code, checked: who may import whom among netsched/ and plugins/.

The graph is built from the source with `ast`, not by importing anything, and
counts EVERY import statement: module level, inside functions, and under
`if TYPE_CHECKING:` (a cycle that only type checking sees is still two
modules that cannot be understood one without the other; break it with a
protocol, not by hiding the import).

Edges, per statement (relative imports resolved against the importing module):
- `import a.b.c` -> a.b.c (a package counts as its __init__);
- `from a.b import x` -> a.b.x when that is a module of ours, else a.b.

Parent packages a program passes through (a/__init__ when importing a.b) are
not edges: a package re-exporting its own submodules is not a cycle.

The repository's plugins/ folder is the package `netsched.plugins` (setup.py maps it),
so its files are named that way here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Folder of the repository -> the package it is installed as.
PACKAGES = {"netsched": "netsched", "plugins": "netsched.plugins"}
PLUGINS = "netsched.plugins"
TESTING = "netsched.testing"
COMPOSITION_ROOT = "netsched.app"

# The modules a plugin may import from the rest of netsched.
FACES = (
    "netsched.framework",  # the plugin contract (the package __init__, not its modules)
    "netsched.framework.names",  # the in-tree plugins' names (constants; the config reads them too)
    "netsched.metrics.plugin_api",  # what metric plugins build on
)
# An out-of-tree plugin's program also imports netsched itself (main, with_plugin).
OUT_OF_TREE_FACES = ("netsched", *FACES)
# Packages under plugins/ that are not plugins: helpers the plugins that use them import.
SHARED_HELPERS = ("netsched.plugins.volumes", "netsched.plugins.gangs")
# The list of in-tree plugins: it imports each plugin folder's package, and nothing else does.
PLUGIN_LIST = "netsched.plugins.registry"
# Edges that break a rule for now, each with who removes it; a listed edge that no longer
# exists fails test_exemptions_are_still_needed, so the list only shrinks.
TEMPORARY_EXEMPTIONS: set[tuple[str, str]] = set()


def _module_name(folder: str, path: Path) -> str:
    parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGES[folder], *parts])


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            out[_module_name(folder, path)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """(imported module of ours, line) for every import statement in the file."""
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _ours(alias.name)
                if target:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_pkg else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = sub if sub in MODULES else _ours(base)
                if target:
                    yield target, node.lineno


def _ours(dotted: str) -> str:
    """The longest prefix of `dotted` that is one of our modules ('' for third-party)."""
    parts = dotted.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in MODULES:
            return cand
        parts.pop()
    return ""


def _graph() -> dict[str, dict[str, int]]:
    graph: dict[str, dict[str, int]] = {}
    for name, path in MODULES.items():
        edges = graph.setdefault(name, {})
        for target, line in _imports(name, path):
            if target != name:
                edges.setdefault(target, line)
    return graph


GRAPH = _graph()


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_one_cycle(graph, set(comp)) for comp in components]


def _one_cycle(graph: dict[str, dict[str, int]], comp: set[str]) -> list[str]:
    """A concrete path start -> ... -> start inside one component (breadth first, shortest)."""
    start = min(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w not in comp:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle found in component {sorted(comp)}")


def _describe(cycle: list[str]) -> str:
    return " -> ".join(
        f"{a} (line {GRAPH[a][b]})" if i < len(cycle) - 1 else a
        for i, (a, b) in enumerate(zip(cycle, [*cycle[1:], cycle[0]], strict=True))
    )


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _where(module: str, graph: dict[str, dict[str, int]], target: str) -> str:
    """`plugins/x/plugin.py:12`: the file of `module` and the line of its (first) import of `target`."""
    path = MODULES.get(module)
    shown = str(path.relative_to(ROOT)) if path else module
    return f"{shown}:{graph[module][target]}"


def _folder(module: str) -> str:
    """The plugin folder's package a module of plugins/ belongs to ('' for plugins/ itself)."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) > 2 and _in(module, PLUGINS) else ""


def _face_violations(graph: dict[str, dict[str, int]]) -> list[str]:
    """Plugin modules importing a module of netsched that is not a face."""
    out = []
    for m, edges in graph.items():
        if not _folder(m):
            continue
        for t in edges:
            if _in(t, PLUGINS) or t in FACES or (m, t) in TEMPORARY_EXEMPTIONS:
                continue
            out.append(
                f"{_where(m, graph, t)}: {m} imports {t}; a plugin imports only the faces "
                f"({', '.join(FACES)}), its own folder and {', '.join(SHARED_HELPERS)}"
            )
    return sorted(out)


def _plugin_to_plugin(graph: dict[str, dict[str, int]]) -> list[str]:
    """Plugin modules importing another plugin folder (a shared helper package is not one)."""
    out = []
    for m, edges in graph.items():
        own = _folder(m)
        if not own or m == PLUGIN_LIST:
            continue
        for t in edges:
            other = _folder(t)
            if not other or other == own or other in SHARED_HELPERS or (m, t) in TEMPORARY_EXEMPTIONS:
                continue
            out.append(
                f"{_where(m, graph, t)}: {m} imports {t}; no plugin imports another plugin "
                "(share code through the framework, or a helper package listed in SHARED_HELPERS)"
            )
    return sorted(out)


def _offenders(source: str, target: str, *, exempt: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        f"{m} imports {t} (line {line})"
        for m, edges in GRAPH.items()
        if _in(m, source) and not any(_in(m, e) for e in exempt)
        for t, line in edges.items()
        if _in(t, target)
    )


def test_the_graph_sees_all_kinds_of_imports() -> None:
    # Sanity: module level, function level and TYPE_CHECKING imports all make edges.
    assert "netsched.framework.runtime" in GRAPH["netsched.scheduler"]
    assert GRAPH["netsched.app"], "the composition root imports nothing?"
    assert any(_in(t, PLUGINS) for t in GRAPH["netsched.app"])


def test_no_import_cycles() -> None:
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles:\n" + "\n".join(_describe(c) for c in cycles)


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]


def test_production_code_does_not_import_the_test_kit() -> None:
    offenders = _offenders("netsched", TESTING, exempt=(TESTING,))
    assert not offenders, "\n".join(offenders)


# Modules besides the composition root that import a plugin package, each with its reason.
PLUGIN_CLIENTS = {
    # `netsched simulate` writes PodGroups into scenarios and reports how each gang ended: it
    # validates them with the gang package's parser and labels, as the plugins read them.
    "netsched.simulate.gangs": "netsched.plugins.gangs",
}


def test_only_the_composition_root_imports_plugins() -> None:
    offenders = [
        o
        for o in _offenders("netsched", PLUGINS, exempt=(COMPOSITION_ROOT, PLUGINS))
        if not any(o.startswith(f"{m} imports {t}") for m, t in PLUGIN_CLIENTS.items())
    ]
    assert not offenders, "\n".join(offenders)


# The core names no plugin family: gangs (PodGroups) live in plugins/gangs and the gang
# plugins, plugged in through the Handle's generic slots (docs/DESIGN.md). These modules of
# netsched/ still name them, each for its reason.
NAMES_GANGS = {
    "netsched.framework": "re-exports PODGROUPS, the resource key the gang package patches",
    "netsched.framework.names": "the in-tree plugins' names: Coscheduling, GangTopology",
    "netsched.kube.resources": "the catalogue of API kinds the reflectors watch: PodGroups",
    "netsched.fakeapi.resources": "the fake API server serves the PodGroup kind",
    "netsched.simulate.gangs": "scenarios with PodGroups, and how each gang ended (PLUGIN_CLIENTS)",
    "netsched.simulate.scenario": "a scenario's podGroups section (simulate/gangs.py decodes it)",
    "netsched.simulate.engine": "adds a scenario's PodGroups to the in-memory cluster",
    "netsched.simulate.report": "reports how each gang ended",
    "netsched.testing.replay": "refuses a scenario with PodGroups (a replay creates nodes and pods only)",
}
GANG_WORDS = re.compile(r"gang|podgroup|pod_group|pod-group", re.IGNORECASE)


def test_the_core_names_no_gangs() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for name, path in MODULES.items()
        if _in(name, "netsched") and not _in(name, PLUGINS) and name not in NAMES_GANGS
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if GANG_WORDS.search(line)
    ]
    assert not found, "the core names gangs (use the Handle's generic slots):\n" + "\n".join(found)


def test_the_gang_exceptions_are_still_needed() -> None:
    stale = [m for m in NAMES_GANGS if not GANG_WORDS.search(MODULES[m].read_text(encoding="utf-8"))]
    assert not stale, f"these modules no longer name gangs, remove them from NAMES_GANGS: {stale}"


def test_the_framework_does_not_import_config() -> None:
    offenders = _offenders("netsched.framework", "netsched.config")
    assert not offenders, "\n".join(offenders)


def test_plugins_import_only_faces() -> None:
    violations = _face_violations(GRAPH)
    assert not violations, "\n".join(violations)


def test_no_plugin_imports_another_plugin() -> None:
    violations = _plugin_to_plugin(GRAPH)
    assert not violations, "\n".join(violations)


def test_the_plugin_rules_name_file_and_line() -> None:
    # A reintroduced violation of each kind, on a made-up graph over real module names.
    graph = {
        "netsched.plugins.node_affinity.plugin": {
            "netsched.framework": 20,
            "netsched.framework.parse": 21,  # behind the face
            "netsched.plugins.node_affinity.args": 22,  # own folder
            "netsched.plugins.taint_toleration.plugin": 23,  # another plugin
        },
        "netsched.plugins.volume_zone.plugin": {"netsched.plugins.volumes": 30},  # a shared helper
        PLUGIN_LIST: {"netsched.plugins.node_affinity": 5},
    }
    assert _face_violations(graph) == [
        "plugins/node_affinity/plugin.py:21: netsched.plugins.node_affinity.plugin imports "
        "netsched.framework.parse; a plugin imports only the faces (netsched.framework, "
        "netsched.framework.names, netsched.metrics.plugin_api), its own folder and "
        "netsched.plugins.volumes, netsched.plugins.gangs"
    ]
    assert _plugin_to_plugin(graph) == [
        "plugins/node_affinity/plugin.py:23: netsched.plugins.node_affinity.plugin imports "
        "netsched.plugins.taint_toleration.plugin; no plugin imports another plugin (share code "
        "through the framework, or a helper package listed in SHARED_HELPERS)"
    ]


def test_faces_and_shared_helpers_exist_and_helpers_define_no_plugin() -> None:
    assert all(face in MODULES for face in FACES), FACES
    for helper in SHARED_HELPERS:
        files = [p for m, p in MODULES.items() if _in(m, helper)]
        assert files, f"shared helper package {helper} has no modules"
        for path in files:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            plugins = [
                f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
                for node in ast.walk(tree)
                if isinstance(node, ast.ClassDef) and any("Plugin" in ast.unparse(b) for b in node.bases)
            ]
            assert not plugins, f"{helper} is a shared helper package, not a plugin: {plugins}"


def test_exemptions_are_still_needed() -> None:
    stale = sorted(f"{m} -> {t}" for m, t in TEMPORARY_EXEMPTIONS if t not in GRAPH.get(m, {}))
    assert not stale, "no longer imported, remove from TEMPORARY_EXEMPTIONS:\n" + "\n".join(stale)


def test_out_of_tree_examples_import_only_faces() -> None:
    # examples/ are out-of-tree plugins as a user writes them: the faces are all they need.
    found = []
    for path in sorted((ROOT / "examples").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno}: imports {n}"
                for n in names
                if _in(n, "netsched") and n not in OUT_OF_TREE_FACES
            ]
    assert not found, "an example imports behind the faces:\n" + "\n".join(found)


# ---------------------------------------------------------------- the API seam is typed, not probed
#
# The scheduler and its plugins reach the cluster through typed seams: ClusterAPI and the
# Handle (netsched.framework.seams), the event sink and recorder, the scheduler's own
# metrics, and the metrics hub the composition root wires. Asking an object whether it has
# one of their members (`getattr(api, "update_pod_condition", None)`, `hasattr(hub,
# "update_nodes")`) hides a seam that says less than its users need: say it in the Protocol.

SEAM_TYPES = {
    "netsched.framework.seams": (
        "ClusterAPI",
        "Handle",
        "RuntimeMetrics",
        "EventRecorder",
        "ObjectReader",
        "MetricsProvider",
    ),
    "netsched.kube.events.sink": ("EventSink",),
    "netsched.metrics.hub": ("MetricsHub",),
}
# (module, member) probes of something that is not the seam, each with its reason.
NOT_SEAM_PROBES = {
    ("netsched.testing.metric_rig", "source"): "a metric plugin's own source, not the hub's method",
}


def _class_members(module: str, names: tuple[str, ...]) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    members: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in names:
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
    return {m for m in members if not m.startswith("_")}


SEAM_MEMBERS = set().union(*(_class_members(m, names) for m, names in SEAM_TYPES.items()))


# What the code calls the seam's objects: a probe of one of these is a probe of the seam,
# whatever member it asks for (a member the Protocol lacks is the probe most worth catching).
SEAM_NAMES = {"api", "handle", "hub", "sink", "observe", "recorder", "kube"}


def _probes(path: Path) -> Iterator[tuple[str, str, int]]:
    """(object, member name, line) of every getattr/hasattr asking for a constant attribute name;
    object is the last name of the expression probed ("api" for `self.handle.api`)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            target = node.args[0]
            obj = target.attr if isinstance(target, ast.Attribute) else ast.unparse(target)
            yield obj, node.args[1].value, node.lineno


def test_the_seam_types_are_found() -> None:
    # Sanity: the rule below reads real members (a renamed Protocol must not empty it).
    for member in ("update_pod_condition", "patch_pod_annotations", "synchronous", "namespace_labels"):
        assert member in SEAM_MEMBERS
    assert {"list_pods", "create_many", "update_nodes"} <= SEAM_MEMBERS


def test_no_getattr_probing_of_the_api_seam() -> None:
    offenders = sorted(
        f"{name} (line {line}): {obj}: probes {member!r}"
        for name, path in MODULES.items()
        for obj, member, line in _probes(path)
        if (member in SEAM_MEMBERS or obj in SEAM_NAMES) and (name, member) not in NOT_SEAM_PROBES
    )
    assert not offenders, "\n".join(offenders)


def test_the_probe_finder_finds_a_probe(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        'x = getattr(self.handle.api, "brand_new", None)\n'
        'y = hasattr(hub, "update_nodes")\n'
        "z = getattr(opts, name, None)\n"
    )
    assert list(_probes(src)) == [("api", "brand_new", 1), ("hub", "update_nodes", 2)]


# One request path (docs/DESIGN.md): every request goes through KubeClient.request/stream, none
# through the generated client's API objects (CoreV1Api, ...) or its call_api/param_serialize.
GENERATED_CALLS = {"call_api", "param_serialize"}


def _generated_client_uses(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
        if name in GENERATED_CALLS or re.fullmatch(r"[A-Z]\w*V\d\w*Api", name):
            yield name, node.lineno


def test_requests_take_the_one_request_path() -> None:
    offenders = sorted(
        f"{name} (line {line}) uses {what}"
        for name, path in MODULES.items()
        for what, line in _generated_client_uses(path)
    )
    assert not offenders, "\n".join(offenders)
