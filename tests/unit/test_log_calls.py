"""Every log call in netsched/ and plugins/ keeps the convention the formatters split on.

The convention is netsched.logkv's: a constant message, then `key=%s` fields,
positional arguments matching the placeholders.  The calls are found with `ast`
(nothing is imported): any `X.debug/info/warning/error/exception/critical/log(...)`
where X is bound to `logging.getLogger(...)` in the module, or is `logging`
itself.  A format that is not a literal must be a parameter of a wrapper that
forwards `*args` (kube/events.py's _warn_once); the literals at the wrapper's
call sites in the same module are checked instead.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from netsched.logkv import split_format

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("netsched", "plugins")
METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"}


@dataclass(frozen=True)
class Call:
    where: str
    fmt: str | None  # None: not a literal and not resolvable
    nargs: int | None  # None: *args passed on
    source: str


def _files() -> Iterator[Path]:
    for folder in FOLDERS:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _literal(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        return left + right if left is not None and right is not None else None
    return None


def _loggers(tree: ast.Module) -> set[str]:
    names = {"logging"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Attribute) and func.attr == "getLogger":
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _parents(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    return {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def _enclosing_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.FunctionDef | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef):
            return node
    return None


def _args_after(call: ast.Call, at: int) -> int | None:
    rest = call.args[at + 1 :]
    return None if any(isinstance(a, ast.Starred) for a in rest) else len(rest)


def _calls_of(tree: ast.Module, name: str) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (
                isinstance(f, ast.Attribute) and f.attr == name
            ):
                yield node


def log_calls(path: Path) -> Iterator[Call]:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    loggers, parents = _loggers(tree), _parents(tree)
    rel = path.relative_to(ROOT)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if node.func.attr not in METHODS or not (isinstance(owner, ast.Name) and owner.id in loggers):
            continue
        at = 1 if node.func.attr == "log" else 0
        if len(node.args) <= at:
            yield Call(f"{rel}:{node.lineno}", None, 0, ast.unparse(node))
            continue
        fmt = _literal(node.args[at])
        if fmt is not None:
            yield Call(f"{rel}:{node.lineno}", fmt, _args_after(node, at), ast.unparse(node))
            continue
        yield from _through_wrapper(tree, parents, node, at, rel)


def _through_wrapper(
    tree: ast.Module, parents: dict[ast.AST, ast.AST], node: ast.Call, at: int, rel: Path
) -> Iterator[Call]:
    """The literals passed to a wrapper whose parameter is the format of this log call."""
    arg, fn = node.args[at], _enclosing_function(node, parents)
    params = [a.arg for a in fn.args.args] if fn is not None else []
    forwards = (
        fn is not None
        and fn.args.vararg is not None
        and isinstance(arg, ast.Name)
        and arg.id in params
        and [ast.unparse(a) for a in node.args[at + 1 :]] == [f"*{fn.args.vararg.arg}"]
    )
    if not forwards or fn is None or not isinstance(arg, ast.Name):
        yield Call(f"{rel}:{node.lineno}", None, None, ast.unparse(node))
        return
    index = params.index(arg.id) - (1 if params and params[0] in ("self", "cls") else 0)
    for call in _calls_of(tree, fn.name):
        fmt = _literal(call.args[index]) if len(call.args) > index else None
        yield Call(f"{rel}:{call.lineno}", fmt, _args_after(call, index), ast.unparse(call))


ALL_CALLS = [c for path in _files() for c in log_calls(path)]


def test_the_scan_finds_the_calls() -> None:
    # Guards the scan itself: it sees well over a hundred calls, the wrapper's callers among them.
    assert len(ALL_CALLS) > 100
    assert any("_warn_once(" in c.source and c.fmt for c in ALL_CALLS)
    assert any(c.where.startswith("plugins/") for c in ALL_CALLS)


@pytest.mark.parametrize("call", ALL_CALLS, ids=[c.where for c in ALL_CALLS])
def test_log_call_keeps_the_convention(call: Call) -> None:
    assert call.fmt is not None, f"the format is not a literal string: {call.source}"
    split = split_format(call.fmt)
    assert not split.problems, f"{call.source}: {'; '.join(split.problems)}"
    if call.nargs is not None:
        assert call.nargs == split.nargs, (
            f"{call.source}: {split.nargs} placeholder(s), {call.nargs} argument(s)"
        )


BROKEN = [
    ("%s plugin failed plugin=%s", "placeholder in the message"),
    ("Bound pod %s to %s", "placeholder in the message"),
    ("pod=%s", "no message before the first field"),
    ("Bound pod=%(pod)s", "named placeholder"),
    ("Waited seconds=%*d", "'*' in placeholder"),
    ("Bound pod=%s pod=%s", "appears twice"),
    ("Bound v=%d", "written by the formatter itself"),
    ("Bound pod=", "has no value"),
]


@pytest.mark.parametrize(("fmt", "problem"), BROKEN)
def test_the_check_catches_broken_formats(fmt: str, problem: str) -> None:
    assert any(problem in p for p in split_format(fmt).problems)


def test_the_scan_catches_calls_it_cannot_check(tmp_path: Path) -> None:
    code = tmp_path / "m.py"
    code.write_text(
        "import logging\n"
        "log = logging.getLogger(__name__)\n"
        "def f(x):\n"
        "    log.info(f'Bound {x}')\n"
        "    log.info('Bound pod=%s', x, x)\n"
        "    msg = 'Bound'\n"
        "    log.warning(msg)\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        calls = list(log_calls(code))
    finally:
        ROOT = saved
    assert [c.fmt for c in calls] == [None, "Bound pod=%s", None]
    assert calls[1].nargs == 2 and split_format("Bound pod=%s").nargs == 1
