"""Field-path errors and a small typed reader for YAML mappings (config and plugin args).

Configuration is checked in one pass that collects every problem, each with
the path of the field at fault (`profiles[0].pluginConfig[2].args.weight`),
so an operator fixes a bad file in one round trip.  Plugin args decoders use
the same reader, so their messages look the same as the framework's.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from netsched.framework.selectors import label_key_errors

_N = TypeVar("_N", int, float)  # a bounded number field


@dataclass(slots=True, frozen=True)
class FieldError:
    path: str
    kind: str  # "Required value", "Invalid value", "Unsupported value", "Duplicate value", "Forbidden"
    detail: str = ""
    value: object = None
    has_value: bool = False

    def __str__(self) -> str:
        out = f"{self.path}: {self.kind}"
        if self.has_value:
            out += f": {_show(self.value)}"
        if self.detail:
            out += f": {self.detail}"
        return out


def _show(v: object) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class ErrorList(list[FieldError]):
    """Accumulates FieldErrors; never raises by itself."""

    def required(self, path: str, detail: str = "") -> None:
        self.append(FieldError(path, "Required value", detail))

    def invalid(self, path: str, value: object, detail: str) -> None:
        self.append(FieldError(path, "Invalid value", detail, value, True))

    def unsupported(self, path: str, value: object, supported: Iterable[str]) -> None:
        sup = ", ".join(f'"{s}"' for s in supported)
        self.append(FieldError(path, "Unsupported value", f"supported values: {sup}", value, True))

    def duplicate(self, path: str, value: object) -> None:
        self.append(FieldError(path, "Duplicate value", "", value, True))

    def forbidden(self, path: str, detail: str) -> None:
        self.append(FieldError(path, "Forbidden", detail))

    def unknown_field(self, path: str) -> None:
        self.append(FieldError(path, "Unknown field", "not a field of this object (typo?)"))


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


_MISSING = object()


class Fields:
    """Reads typed values out of a mapping, recording errors instead of raising.

    Every getter returns the default when the key is absent or wrong, so a
    decoder runs to the end and reports all problems at once.  Call
    `finish()` last to flag keys nobody asked for (kube decodes strictly).
    """

    def __init__(self, raw: object, path: builtins.str, errs: ErrorList) -> None:
        self.path = path
        self.errs = errs
        self.seen: set[builtins.str] = set()
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            errs.invalid(path or "<root>", type(raw).__name__, "must be a mapping")
            raw = {}
        self.raw: Mapping[builtins.str, object] = raw

    def has(self, key: builtins.str) -> builtins.bool:
        return key in self.raw and self.raw[key] is not None

    def _get(self, key: builtins.str) -> object:
        self.seen.add(key)
        v = self.raw.get(key, _MISSING)
        return _MISSING if v is None else v

    def any(self, key: builtins.str, default: Any = None) -> Any:
        v = self._get(key)
        return default if v is _MISSING else v

    def int(
        self,
        key: builtins.str,
        default: builtins.int,
        *,
        min: builtins.int | None = None,
        max: builtins.int | None = None,
    ) -> builtins.int:
        v = self._get(key)
        if v is _MISSING:
            return default
        p = join(self.path, key)
        if isinstance(v, builtins.bool) or not isinstance(v, builtins.int):
            if isinstance(v, builtins.float) and v.is_integer():
                v = builtins.int(v)
            else:
                self.errs.invalid(p, v, "must be an integer")
                return default
        return builtins.int(self._bounded(p, v, default, min, max))

    def float(
        self,
        key: builtins.str,
        default: builtins.float,
        *,
        min: builtins.float | None = None,
        max: builtins.float | None = None,
    ) -> builtins.float:
        v = self._get(key)
        if v is _MISSING:
            return default
        p = join(self.path, key)
        if isinstance(v, builtins.bool) or not isinstance(v, builtins.int | builtins.float):
            self.errs.invalid(p, v, "must be a number")
            return default
        return builtins.float(self._bounded(p, builtins.float(v), default, min, max))

    def _bounded(self, p: builtins.str, v: _N, default: _N, lo: _N | None, hi: _N | None) -> _N:
        if lo is not None and v < lo:
            self.errs.invalid(p, v, f"must be greater than or equal to {lo}")
            return default
        if hi is not None and v > hi:
            self.errs.invalid(p, v, f"must be less than or equal to {hi}")
            return default
        return v

    def bool(self, key: builtins.str, default: builtins.bool) -> builtins.bool:
        v = self._get(key)
        if v is _MISSING:
            return default
        if not isinstance(v, builtins.bool):
            self.errs.invalid(join(self.path, key), v, "must be true or false")
            return default
        return v

    def str(
        self, key: builtins.str, default: builtins.str, *, choices: Iterable[builtins.str] | None = None
    ) -> builtins.str:
        v = self._get(key)
        if v is _MISSING:
            return default
        p = join(self.path, key)
        if not isinstance(v, builtins.str):
            self.errs.invalid(p, v, "must be a string")
            return default
        if choices is not None:
            allowed = builtins.list(choices)
            if v not in allowed:
                self.errs.unsupported(p, v, allowed)
                return default
        return v

    def list(self, key: builtins.str) -> builtins.list[Any]:
        v = self._get(key)
        if v is _MISSING:
            return []
        if not isinstance(v, builtins.list):
            self.errs.invalid(join(self.path, key), type(v).__name__, "must be a list")
            return []
        return v

    def label_keys(self, key: builtins.str) -> builtins.list[builtins.str]:
        """A list of distinct label keys (e.g. topology levels): each entry that is not a valid
        key, or repeats an earlier one, is reported at its index; the valid ones, in order."""
        path = join(self.path, key)
        out: builtins.list[builtins.str] = []
        for i, raw in enumerate(self.list(key)):
            p = join(path, i)
            problems = (
                label_key_errors(raw)
                if isinstance(raw, builtins.str) and raw
                else ["must be a node label key"]
            )
            if problems:
                self.errs.invalid(p, raw, "; ".join(problems))
            elif raw in out:
                self.errs.duplicate(p, raw)
            else:
                out.append(raw)
        return out

    def sub(self, key: builtins.str) -> Fields:
        """A reader over a nested mapping (empty when absent)."""
        v = self._get(key)
        return Fields(None if v is _MISSING else v, join(self.path, key), self.errs)

    def items(self, key: builtins.str) -> builtins.list[Fields]:
        """Readers over each mapping in a list field."""
        p = join(self.path, key)
        return [Fields(item, join(p, i), self.errs) for i, item in enumerate(self.list(key))]

    def finish(self) -> None:
        for k in self.raw:
            if k not in self.seen:
                self.errs.unknown_field(join(self.path, builtins.str(k)))
