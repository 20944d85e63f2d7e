"""argparse pieces every netsched command shares: kube's flag value types and its --help shape.

kube-scheduler's flags come from pflag, whose help shows each flag's default
after its text, `(default 10s)`, `(default "0.0.0.0")`, and nothing for a zero
value.  HelpFormatter does the same for `netsched`, `netsched demo` and
`netsched simulate`.  A default given as a string to a flag with a `type`
(durations, lists) is shown as written, "2s" rather than 2.0, and argparse
converts it like a command-line value.
"""

from __future__ import annotations

import argparse
from typing import Any

from netsched.config.duration import DurationError, parse_duration


def flag_bool(text: str) -> bool:
    """pflag's bool: true/false (and 1/0, yes/no, on/off)."""
    t = text.strip().lower()
    if t in ("true", "1", "yes", "on"):
        return True
    if t in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def flag_duration(text: str) -> float:
    """A Go duration (15s, 1m30s, 500ms) in seconds."""
    try:
        return parse_duration(text)
    except DurationError as e:
        raise argparse.ArgumentTypeError(f"expected a duration such as 15s, got {text!r}: {e}") from e


def flag_count(text: str) -> int:
    """A whole number of at least 1 (how many nodes, pods, ...)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def flag_list(text: str) -> list[str]:
    """pflag's string slice: comma-separated, blanks dropped."""
    return [p.strip() for p in text.split(",") if p.strip()]


def show_default(action: argparse.Action) -> str:
    """The "(default ...)" pflag would print for this flag, or "" for a zero value."""
    default = action.default
    if action.option_strings == [] or default in (None, "", False, 0, [], {}, ()):
        return ""
    if default is argparse.SUPPRESS:
        return ""
    if isinstance(default, str):
        return f"(default {default})" if action.type is not None else f'(default "{default}")'
    if isinstance(default, bool):
        return "(default true)"
    if isinstance(default, (list, tuple)):
        return f"(default [{','.join(map(str, default))}])"
    return f"(default {default})"


_TYPE_NAMES: dict[Any, str] = {
    int: "int",
    flag_count: "int",
    float: "float",
    flag_bool: "bool",
    flag_duration: "duration",
    flag_list: "strings",
}


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help shaped like pflag's: a flag's value named by its type (`--secure-port int`),
    and "(default X)" after each flag that has a non-zero default."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        kwargs.setdefault("max_help_position", 36)
        super().__init__(prog, **kwargs)

    def _get_default_metavar_for_optional(self, action: argparse.Action) -> str:
        return _TYPE_NAMES.get(action.type, "string")

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        shown = show_default(action)
        if not shown or "(default" in text:
            return text
        # argparse %-formats help strings: a literal % in a default must be doubled.
        return f"{text} {shown.replace('%', '%%')}" if text else shown.replace("%", "%%")
