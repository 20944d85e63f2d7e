"""Choosing among nodes where preemption would work (kube's pickOneNodeForPreemption).

Criteria in order, each keeping only the best nodes until one is left:
  1. fewest PodDisruptionBudget violations,
  2. lowest priority of the most important victim,
  3. smallest sum of victim priorities (each shifted by 2^31 so negatives
     cannot make more victims look cheaper),
  4. fewest victims,
  5. latest start time of the earliest-started victim among those of the
     highest priority (disturb the youngest work),
then the first remaining candidate (non-violating candidates come first, in
the order they were found).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from netsched.framework import PodInfo

from .victims import Victims, start_time

_PRIORITY_SHIFT = 2**31


@dataclass(slots=True)
class Candidate:
    node: str
    victims: Victims

    @property
    def pods(self) -> list[PodInfo]:
        return self.victims.pods


def _earliest_start_of_most_important(pods: list[PodInfo]) -> float:
    top = pods[0].priority
    earliest = start_time(pods[0])
    for p in pods:
        if p.priority > top:
            top, earliest = p.priority, start_time(p)
        elif p.priority == top:
            earliest = min(earliest, start_time(p))
    return earliest


SCORE_FUNCS: tuple[Callable[[Candidate], float], ...] = (
    lambda c: -c.victims.num_pdb_violations,
    lambda c: -c.pods[0].priority,
    lambda c: -sum(p.priority + _PRIORITY_SHIFT for p in c.pods),
    lambda c: -len(c.pods),
    lambda c: _earliest_start_of_most_important(c.pods),
)


def pick_one(candidates: list[Candidate]) -> Candidate | None:
    if not candidates:
        return None
    pool = candidates
    for f in SCORE_FUNCS:
        if len(pool) == 1:
            break
        scores = [f(c) for c in pool]
        best = max(scores)
        pool = [c for c, s in zip(pool, scores, strict=True) if s == best]
    return pool[0]
