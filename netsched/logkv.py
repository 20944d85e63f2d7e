"""Structured fields from printf-style log calls: the convention every netsched log call keeps.

netsched logs the way kube-scheduler does (a constant message plus key/value
pairs), but through the standard `logging` module, so a call reads

    log.info("Successfully bound pod to node pod=%s node=%s profile=%s", pod.key, node, name)

The format string is the message, then one `key=VALUE` per field, separated by
whitespace.  `split_format` cuts it there (once per format string, cached), and
the formatters in netsched.logutil pair each VALUE template with its arguments:
the JSON format writes `"msg":"Successfully bound pod to node","pod":"default/p0",...`
and the text format `"Successfully bound pod to node" pod="default/p0" ...`.

The rules (tests/unit/test_log_calls.py checks every call in netsched/ and plugins/):
- The message comes first and holds no placeholder: it is the constant a log
  pipeline filters on.  Variable parts go into fields.
- A field starts at whitespace followed by `key=`; keys are identifiers
  (lowerCamelCase as kube's) and none is `ts`, `caller`, `msg`, `v` or
  `stacktrace`, which the formatters write themselves.
- A VALUE that is one bare placeholder keeps its argument's type: `%s`/`%r`
  write strings as strings and numbers, booleans and None as such; `%d` an
  integer, `%.2f` a number; an exception is written as its message.  `%r` exists
  for quoting, which the formatters now do (klog's rules), so it adds no
  Python quotes around strings.  A VALUE with more than a placeholder
  (`%s/%s`, `%.1fs`, `"%s"` around one placeholder is the same as `%s`) is
  rendered with `%` and written as a string.
- Positional arguments only, as many as the placeholders (no `%(name)s`, no `*`).

A call that breaks the rules is still logged whole: the rendered text becomes
the message and nothing is lost, only the fields are.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any

# The fields a formatter writes itself (kube's JSON: ts, caller, msg, v; ours: stacktrace).
RESERVED_KEYS = frozenset({"ts", "caller", "msg", "v", "stacktrace"})

_PLACEHOLDER = re.compile(
    r"%(?P<name>\([^)]*\))?(?P<flags>[#0\- +]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?[hlL]?(?P<conv>[diouxXeEfFgGcrsa%])"
)
# A field starts where whitespace (or the string's start) is followed by `identifier=`.
_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z_][A-Za-z0-9_]*)=")

RAW_S, RAW_R, INT, FLOAT, TEXT, CONST = "raw_s", "raw_r", "int", "float", "text", "const"


@dataclass(frozen=True, slots=True)
class Field:
    """One `key=VALUE` of a format string; `nargs` arguments fill `template`."""

    key: str
    template: str
    kind: str
    nargs: int


@dataclass(frozen=True, slots=True)
class Split:
    """A format string cut into its message and fields; `problems` name broken rules."""

    msg: str
    head: str  # the message as written (placeholders and %% kept), for the lenient path
    head_args: int
    fields: tuple[Field, ...]
    nargs: int
    problems: tuple[str, ...]


class Number:
    """A number already formatted by its template (`%.2f` -> 0.12): written unquoted, as is."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _placeholders(template: str) -> tuple[list[re.Match[str]], list[str]]:
    """The argument-consuming placeholders of template, and what is wrong with them."""
    found, problems = [], []
    for m in _PLACEHOLDER.finditer(template):
        if m.group("conv") == "%":
            continue
        if m.group("name"):
            problems.append(f"named placeholder {m.group(0)!r}: use positional arguments")
        if m.group("width") == "*" or m.group("prec") == "*":
            problems.append(f"'*' in placeholder {m.group(0)!r}: write the width into the format")
        found.append(m)
    return found, problems


def _nargs(found: list[re.Match[str]]) -> int:
    return sum(1 + (m.group("width") == "*") + (m.group("prec") == "*") for m in found)


def _field(key: str, template: str) -> tuple[Field, list[str]]:
    inner = template
    if len(inner) >= 2 and inner[0] == inner[-1] == '"':
        inner = inner[1:-1]  # key="%s": the quotes a hand-written klog line added
    found, problems = _placeholders(inner)
    nargs = _nargs(found)
    if not template:
        problems.append(f"{key}= has no value")
    if not found:
        return Field(key, inner.replace("%%", "%"), CONST, 0), problems
    only = found[0] if len(found) == 1 and found[0].span() == (0, len(inner)) else None
    kind = TEXT
    if only is not None and nargs == 1:
        conv, plain = (
            only.group("conv"),
            not (only.group("flags") or only.group("width") or only.group("prec")),
        )
        if conv in "sa" and plain:
            kind = RAW_S
        elif conv == "r" and plain:
            kind = RAW_R
        elif conv in "diu":
            kind = INT
        elif conv in "eEfFgG":
            kind = FLOAT
    return Field(key, inner, kind, nargs), problems


@functools.lru_cache(maxsize=4096)
def split_format(fmt: str) -> Split:
    """The message and fields of a log format string (see the module docstring for the rules)."""
    starts = list(_KEY.finditer(fmt))
    head = fmt[: starts[0].start()].rstrip() if starts else fmt.rstrip()
    found, problems = _placeholders(head)
    if found:
        problems.append(
            "placeholder in the message: keep the message constant and put values in key=%s fields"
        )
    if not head.strip():
        problems.append("no message before the first field")
    fields: list[Field] = []
    seen: set[str] = set()
    for i, m in enumerate(starts):
        key = m.group(1)
        end = starts[i + 1].start() if i + 1 < len(starts) else len(fmt)
        field, why = _field(key, fmt[m.end() : end].rstrip())
        problems += why
        if key in RESERVED_KEYS:
            problems.append(f"key {key!r} is written by the formatter itself")
        if key in seen:
            problems.append(f"key {key!r} appears twice")
        seen.add(key)
        fields.append(field)
    head_args = _nargs(found)
    msg = head.replace("%%", "%") if not found else head
    nargs = head_args + sum(f.nargs for f in fields)
    return Split(msg, head, head_args, tuple(fields), nargs, tuple(problems))


def exception_text(e: BaseException) -> str:
    """An error's message, as kube writes err: the text, or the type when the text is empty."""
    text = str(e)
    return text if text else type(e).__name__


def _plain(value: Any, as_repr: bool) -> Any:
    """The value a bare %s / %r placeholder contributes: primitives keep their type."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, BaseException):
        return repr(value) if as_repr else exception_text(value)
    if isinstance(value, (list, tuple, dict)):
        return value
    return repr(value) if as_repr else str(value)


def _value(field: Field, args: tuple[Any, ...]) -> Any:
    if field.kind == CONST:
        return field.template
    if field.kind in (RAW_S, RAW_R):
        return _plain(args[0], field.kind == RAW_R)
    text = field.template % args
    if field.kind == INT:
        return int(text) if text.lstrip("-").isdigit() else text
    if field.kind == FLOAT:
        try:
            return Number(text) if math.isfinite(float(text)) else text
        except ValueError:
            return text
    return text


def fields_of(fmt: Any, args: Any) -> tuple[str, list[tuple[str, Any]]] | None:
    """(message, [(key, value)]) of a record's msg and args; None when it breaks the rules
    in a way that leaves no fields (the caller then writes the rendered text as the message)."""
    if not isinstance(fmt, str):
        return None
    split = split_format(fmt)
    if isinstance(args, dict):  # logging unwraps a lone mapping argument
        args = (args,)
    if not isinstance(args, tuple) or len(args) != split.nargs:
        return None
    try:
        msg = split.head % args[: split.head_args] if split.head_args else split.msg
        out: list[tuple[str, Any]] = []
        at = split.head_args
        for f in split.fields:
            out.append((f.key, _value(f, args[at : at + f.nargs])))
            at += f.nargs
    except (TypeError, ValueError):
        return None
    return msg, out
