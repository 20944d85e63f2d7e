"""The rebalancer's debug page, `/debug/rebalancer` (Handle.debug_page): the last rounds' reports.

What an operator asks before turning `dryRun` off, or when nothing moves: which
nodes were hot and for what, which pods each round planned to move where and
why (the figures of the Event), what each eviction answered (a budget's
refusal included), which hot nodes nothing could leave and why, and the rounds
that moved nothing by rule (fallback, stale, limit).  Newest round first; a
replica keeps the rounds it ran while leading (a standby shows `leading:
false` and the rounds it ran before it lost the lease, if any).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from .args import RebalancerArgs

PATH = "/debug/rebalancer"


class Report(Protocol):
    """plugin.RoundReport, as the page reads it."""

    @property
    def round(self) -> int: ...
    @property
    def at(self) -> float: ...
    @property
    def hot(self) -> dict[str, list[str]]: ...
    @property
    def moves(self) -> list[dict[str, Any]]: ...
    @property
    def blocked(self) -> dict[str, str]: ...
    @property
    def skipped(self) -> str: ...


def view(reports: Sequence[Report], args: RebalancerArgs, leading: bool) -> dict[str, Any]:
    """The page's data for one profile's rebalancer: `reports` oldest first."""
    return {
        "leading": leading,
        "dryRun": args.dry_run,
        "intervalSeconds": args.interval_seconds,
        "consecutiveRounds": args.consecutive_rounds,
        "watermarks": {kind: marks.encode() for kind, marks in args.watermarks.items()},
        "rounds": [_round(r) for r in reversed(reports)],
    }


def _round(r: Report) -> dict[str, Any]:
    return {
        "round": r.round,
        "at": datetime.fromtimestamp(r.at, UTC).isoformat(timespec="seconds"),
        "skipped": r.skipped,
        "hot": r.hot,
        "moves": r.moves,
        "blocked": r.blocked,
    }


def text(data: dict[str, Any]) -> str:
    """The page as text (`format=text`): a line per round, a line per move and per blocked node."""
    mode = "dry run (plans, evicts nothing)" if data["dryRun"] else "acting (evicts)"
    lines = [
        f"{'leader' if data['leading'] else 'standby'}; {mode}; a round every "
        f"{data['intervalSeconds']:g}s, hot after {data['consecutiveRounds']} rounds above high",
    ]
    if not data["rounds"]:
        lines.append("no rounds yet" + ("" if data["leading"] else " (rounds run on the leader only)"))
    for r in data["rounds"]:
        hot = ", ".join(f"{node} ({'+'.join(kinds)})" for node, kinds in sorted(r["hot"].items()))
        head = f"round {r['round']} at {r['at']}: "
        if r["skipped"]:
            head += f"skipped ({r['skipped']})"
        else:
            head += f"{len(r['moves'])} move(s)"
        lines.append(head + (f"; hot: {hot}" if hot else "; no hot node"))
        for m in r["moves"]:
            lines.append(
                f"  {m['result']:<9} {m['pod']} {m['from']} -> {m['to']} [{m['trigger']}]: {m['why']}"
            )
        for node, why in sorted(r["blocked"].items()):
            lines.append(f"  blocked   {node}: {why}")
    return "\n".join(lines) + "\n"
