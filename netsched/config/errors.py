"""The error raised at the configuration boundary, carrying every problem found."""

from __future__ import annotations

from collections.abc import Iterable

from netsched.framework.fields import FieldError


class ConfigError(Exception):
    """Raised at the boundary with every collected problem."""

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__("invalid configuration:\n" + "\n".join(f"  - {e}" for e in self.errors))
