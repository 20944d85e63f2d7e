"""Figures of a simulation: spread of node utilisation, the best any scheduler could do, output.

Spread (after placement, over all nodes): the maximum, mean, standard
deviation and max/mean of each resource's utilisation.  The lower bound of
the maximum is water filling: pour the pods' total load into the nodes, each
starting at its background, raising the lowest first; the level u* reached
is the smallest u with

    sum_i max(0, u x capacity_i - background_i) >= total pod load

and no placement can end with a maximum below max(u*, the hottest
background).  It treats load as divisible (pods are not), ignores filters
(taints, selectors) and, for network, bounds each direction separately, so
it is a true lower bound: a scheduler at the bound is optimal, one within a
few percent of it is close.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netsched.framework.parse import parse_pod
from netsched.framework.quantity import CPU, MEMORY
from netsched.framework.snapshot import FloatArray
from netsched.metrics import pod_bandwidth
from netsched.simulate.configs import configured_thresholds
from netsched.simulate.engine import Run
from netsched.simulate.gangs import GangResult, gang_outcomes
from netsched.simulate.model import LoadModel, Loads
from netsched.simulate.moves import EVICTED, figures
from netsched.simulate.scenario import Scenario

RESOURCES = ("network", "cpu", "memory")
__all__ = ["Report", "Spread", "configured_thresholds", "lower_bound", "lower_bounds", "water_fill"]


@dataclass(frozen=True, slots=True)
class Spread:
    max: float
    mean: float
    stddev: float
    max_over_mean: float

    @classmethod
    def of(cls, values: FloatArray) -> Spread:
        """Over the finite values (a node without a link speed has no network utilisation)."""
        v = values[np.isfinite(values)]
        if not len(v):
            return cls(math.nan, math.nan, math.nan, math.nan)
        mean = float(v.mean())
        top = float(v.max())
        return cls(top, mean, float(v.std()), top / mean if mean > 0 else math.nan)

    def to_dict(self) -> dict[str, float | None]:
        return {
            "max": _num(self.max),
            "mean": _num(self.mean),
            "stddev": _num(self.stddev),
            "maxOverMean": _num(self.max_over_mean),
        }


def water_fill(capacity: FloatArray, background: FloatArray, total: float, tol: float = 1e-9) -> float:
    """Smallest u with sum_i max(0, u x capacity_i - background_i) >= total, by bisection."""
    ok = np.isfinite(capacity) & (capacity > 0)
    cap, bg = capacity[ok], np.nan_to_num(background[ok])
    if total <= 0 or not len(cap):
        return 0.0 if total <= 0 else math.inf

    def poured(u: float) -> float:
        return float(np.maximum(0.0, u * cap - bg).sum())

    lo, hi = 0.0, float(((bg.sum() + total) / cap.sum()) + (bg / cap).max())
    while hi - lo > tol * max(1.0, hi):
        mid = (lo + hi) / 2
        if poured(mid) >= total:
            hi = mid
        else:
            lo = mid
    return hi


def lower_bound(capacity: FloatArray, background: FloatArray, total: float) -> float:
    """The least possible maximum utilisation: max(water-filling level, hottest background)."""
    ok = np.isfinite(capacity) & (capacity > 0)
    if not ok.any():
        return math.nan
    hottest = float((np.nan_to_num(background[ok]) / capacity[ok]).max())
    return max(water_fill(capacity, background, total), hottest)


def lower_bounds(scenario: Scenario) -> dict[str, float]:
    """Per resource, the least maximum utilisation any placement of all the pods could reach."""
    model = LoadModel(scenario)  # background and existing pods only
    base = model.loads(scenario.end)
    rx = tx = cpu = mem = 0.0
    for raw in scenario.pods:
        pod = parse_pod(raw)
        r, t = pod_bandwidth(pod, 0.0)
        rx, tx = rx + r, tx + t
        cpu += pod.requests.get(CPU, 0) * scenario.usage.cpu_of_requests
        mem += pod.requests.get(MEMORY, 0)
    # What is on each node before the pods come: background plus existing pods.
    fixed_cpu = np.nan_to_num(base.cpu) * model.alloc_cpu
    fixed_mem = np.nan_to_num(base.memory) * model.alloc_mem
    return {
        "network": max(lower_bound(model.link, base.rx, rx), lower_bound(model.link, base.tx, tx)),
        "cpu": lower_bound(model.alloc_cpu, fixed_cpu, cpu),
        "memory": lower_bound(model.alloc_mem, fixed_mem, mem),
    }


# ---------------------------------------------------------------- the report


@dataclass
class Report:
    scenario: Scenario
    runs: list[Run]  # the simulated configuration first, then the compared one (if any)
    configs: list[str]  # where each run's configuration came from
    bounds: dict[str, float]
    # LoadThreshold's limits in the first run's configuration (configured_thresholds), drawn on the chart.
    thresholds: dict[str, float] = field(default_factory=dict)

    def spread(self, run: Run) -> dict[str, Spread]:
        assert run.after is not None
        return {r: Spread.of(v) for r, v in run.after.by_resource().items()}

    def pods_per_node(self, run: Run) -> Counter[str]:
        """Pods on each node at the end (bound and not gone)."""
        return Counter(run.live().values())

    def gangs(self, run: Run) -> list[GangResult]:
        """Each PodGroup's outcome in `run` (all placed or not, time to full placement)."""
        s = self.scenario
        labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in s.nodes}
        return gang_outcomes(
            s.pod_groups, s.pods, run.arrived_at, run.placements, run.bound_at, labels, s.levels
        )

    # ------------------------------------------------------------ text

    def text(self, *, placements: bool = True) -> str:
        """The header and the verdict first, then the summaries; the per-pod table, the longest
        part, last (or not at all)."""
        parts = [self._header() + "\n" + self.verdict()]
        if self.scenario.pod_groups:
            parts.append(self._gangs())
        parts += [self._nodes(), self._spread()]
        if self.scenario.traffic:
            parts.append(self._traffic())
        if self.scenario.timeline:
            parts.append(self._timeline())
        over = self._over_limits()
        if over:
            parts.append(over)
        if any(r.rebalancing is not None for r in self.runs):
            parts.append(self._moves())
        if placements:
            parts.append(self._placements())
        return "\n\n".join(parts) + "\n"

    def verdict(self) -> str:
        """One line: per resource, the run whose hottest node ended closest to the lower bound
        (runs equally close are all named), its maximum and the bound."""
        out = []
        for res in RESOURCES:
            maxima = {r.label: self.spread(r)[res].max for r in self.runs}
            finite = [m for m in maxima.values() if m == m]
            if not finite:
                continue
            best = min(finite)
            # Equal as shown (one decimal of a percent): the table would show no difference.
            who = "=".join(label for label, m in maxima.items() if m == m and _pct(m) == _pct(best))
            out.append(f"{res} {who} {_pct(best)} (bound {_pct(self.bounds[res])})")
        return "Closest to the lower bound (hottest node): " + "; ".join(out)

    def _gangs(self) -> str:
        head = ["GROUP", "MIN", "MEMBERS"]
        for r in self.runs:
            head += [f"{r.label} placed", "outcome", "spans", "to full (s)"]
        outcomes = [self.gangs(r) for r in self.runs]
        rows = []
        for i, g in enumerate(outcomes[0]):
            row = [g.key, str(g.min_member), str(g.members)]
            for per_run in outcomes:
                o = per_run[i]
                full = "-" if o.seconds_to_full is None else f"{o.seconds_to_full:.2f}"
                row += [
                    str(o.placed),
                    o.outcome.upper() if o.outcome == "split" else o.outcome,
                    o.spanned(),
                    full,
                ]
            rows.append(row)
        note = (
            "Pod groups (all: every member placed; started: minMember placed; SPLIT: some placed, "
            "fewer than minMember; spans: the topology domains its placed members are in, at the "
            "level its PodGroup asks for, else the innermost level of the scenario's nodes; to full: "
            "last member's arrival to its gang fully placed)"
        )
        return note + "\n" + table(head, rows)

    def _header(self) -> str:
        s = self.scenario
        t = s.timing
        lines = [
            f"Scenario {s.name} ({s.source}): {len(s.nodes)} nodes, {len(s.existing_pods)} existing pods, "
            f"{len(s.pods)} pods arriving at {t.arrival_rate:g}/s over {s.end:.1f} s"
        ]
        width = max(9, *(len(run.label) + 1 for run in self.runs))
        for run, cfg in zip(self.runs, self.configs, strict=True):
            live = len(run.live())
            placed = f"{live}/{live + len(run.unscheduled)} pods placed"
            if run.deleted_at or run.created_at:
                placed += (
                    f" at {run.end:g} s ({len(run.deleted_at)} deleted, "
                    f"{len(run.created_at)} created by controllers)"
                )
            if run.metrics_sources:
                per_poll = run.queries / run.polls if run.polls else 0.0
                metrics = (
                    f"{run.polls} poll(s), {per_poll:g} queries per poll, "
                    f"{run.queries_while_scheduling} queries while scheduling"
                )
            else:
                metrics = "no metrics plugins"
            lines.append(f"  {run.label:<{width}} {cfg}: {placed}; {metrics}")
        if s.outages:
            lines.append(
                "  Prometheus does not answer: " + ", ".join(f"{a:g}..{b:g} s" for a, b in s.outages)
            )
        return "\n".join(lines)

    def _placements(self) -> str:
        keys = [_key(p) for p in self.scenario.pods]
        head = ["POD"] + [r.label.upper() for r in self.runs]
        rows = [[k] + [r.placements.get(k, "-") for r in self.runs] for k in keys]
        out = "Placements\n" + table(head, rows)
        for r in self.runs:
            for key, why in r.unscheduled.items():
                out += f"\n  {r.label}: {key} not placed: {why}"
        return out

    def _nodes(self) -> str:
        first = self.runs[0]
        assert first.before is not None
        head = ["NODE", "LINK"]
        for res in RESOURCES:
            head += [f"{res.upper()[:3]} before"] + [r.label for r in self.runs]
        head += ["PODS " + "/".join(r.label for r in self.runs)]
        counts = [self.pods_per_node(r) for r in self.runs]
        rows = []
        for i, name in enumerate(self.scenario.node_names):
            row = [name, _rate(self.scenario.link_speed.get(name, math.nan))]
            for res in RESOURCES:
                row.append(_pct(first.before.by_resource()[res][i]))
                row += [_pct(_after(r)[res][i]) for r in self.runs]
            row.append("/".join(str(c[name]) for c in counts))
            rows.append(row)
        note = (
            "Node utilisation at the end (network: busier direction / link speed; cpu, memory: "
            "background + requests / allocatable, cpu requests times usage.cpuOfRequests)"
        )
        return note + "\n" + table(head, rows)

    def _spread(self) -> str:
        head = ["RESOURCE", "PROFILE", "MAX", "MEAN", "STDDEV", "MAX/MEAN"]
        rows = []
        for res in RESOURCES:
            for r in self.runs:
                sp = self.spread(r)[res]
                rows.append(
                    [
                        res,
                        r.label,
                        _pct(sp.max),
                        _pct(sp.mean),
                        _pct(sp.stddev),
                        _ratio_text(sp.max_over_mean),
                    ]
                )
            rows.append([res, "lower bound", _pct(self.bounds[res]), "", "", ""])
        return "Spread after placement (lower bound: the least maximum any placement could reach)\n" + table(
            head, rows
        )

    def _traffic(self) -> str:
        levels = list(self.scenario.levels)
        head = ["PROFILE", "PAIR TRAFFIC", "CROSS-NODE", *(f"CROSS {lv.rsplit('/', 1)[-1]}" for lv in levels)]
        rows = []
        for r in self.runs:
            t = r.traffic
            if t is None:
                continue
            rows.append(
                [r.label, _rate(t.total), _pct(t.cross_node), *(_pct(t.cross_level[lv]) for lv in levels)]
            )
        note = (
            "Traffic between workloads after placement (the share of the pairs' bytes/s between placed "
            "pods that crosses nodes, and that leaves each topology level's domain)"
        )
        return note + "\n" + table(head, rows)

    def _over_limits(self) -> str:
        """Why a node of the simulated run may end above LoadThreshold's CPU limit, and how far
        (the limit judges each decision, not the load the pods make afterwards)."""
        limit = self.thresholds.get("cpu")
        run = self.runs[0]
        if limit is None:
            return ""
        seen = [(ph.label, ph.figures.max_cpu) for ph in run.phases]
        if run.after is not None and len(run.after.cpu):
            seen.append(("at the end", float(np.nanmax(run.after.cpu))))
        over = [(label, v) for label, v in seen if v == v and v > limit + 1e-9]
        if not over:
            return ""
        worst = max(over, key=lambda x: x[1])
        return (
            f"Above LoadThreshold's CPU limit ({_pct(limit)}) in {run.label}: "
            + ", ".join(f"{label} {_pct(v)}" for label, v in over)
            + f" (at most {(worst[1] - limit) * 100:.1f} points over). LoadThreshold judges each pod when it is placed, against "
            "the CPU its node read at the last poll plus the ledger's estimates of the pods placed since "
            "(requests x cpuFactor, 0.85 unless configured); this scenario's pods use "
            f"{self.scenario.usage.cpu_of_requests:g} x their requests (usage.cpuOfRequests), and pods placed "
            "within one rate window are judged by those estimates alone, so a node filled in a burst can end "
            "above the limit by the difference. The limit keeps decisions under it, not the load that follows."
        )

    def _timeline(self) -> str:
        levels = list(self.scenario.levels)
        head = ["PROFILE", "PHASE", "DONE (s)", "PODS", "PENDING", "CROSS-NODE"]
        head += [f"CROSS {lv.rsplit('/', 1)[-1]}" for lv in levels]
        head += [
            "MAX NIC",
            "NICS OVER LIMIT",
            "MAX CPU",
            "ON HOT NODES (traffic)",
            "DELETED (other)",
            "CREATED",
        ]
        rows = []
        hot: set[str] = set()
        for r in self.runs:
            for ph in r.phases:
                f = ph.figures
                hot.update(f.hot_nodes)
                t = f.traffic
                done = f"{ph.at:.1f}" + ("" if ph.complete else " (incomplete)")
                over = "-" if f.over_limit is None or f.limit is None else f"{f.over_limit} > {_pct(f.limit)}"
                rows.append(
                    [
                        r.label,
                        ph.label,
                        done,
                        str(f.placed),
                        str(ph.pending),
                        _pct(t.cross_node) if t else "-",
                        *(_pct(t.cross_level[lv]) if t else "-" for lv in levels),
                        _pct(f.max_network),
                        over,
                        _pct(f.max_cpu),
                        f"{f.on_hot} ({f.traffic_on_hot})",
                        f"{ph.deleted} ({ph.deleted_other})",
                        str(ph.created),
                    ]
                )
            if r.cut:
                rows.append(
                    [r.label, "(run cut: still busy an hour after the last timeline entry)"]
                    + [""] * (len(head) - 2)
                )
        note = (
            "Timeline (each phase's placement when it is done: a rollout when every new pod is available "
            "and no old one is left, another phase when the next starts or the run ends; true load with "
            "every bound pod that is not gone counted in full, network the busier direction; hot nodes: "
            f"background NIC >= 50 % ({', '.join(sorted(hot)) or 'none'}); traffic: pods of workloads in "
            "traffic pairs; other deletions: not by a rollout or ReplicaSet)"
        )
        return note + "\n" + table(head, rows)

    def _moves(self) -> str:
        head = ["PROFILE", "AT (s)", "ROUND", "POD", "TRIGGER", "FROM", "TO", "BEFORE", "AFTER", "TO AFTER"]
        head += ["RESULT", "REPLACEMENT ON"]
        rows: list[list[str]] = []
        sums: list[str] = []
        for r in self.runs:
            rb = r.rebalancing
            if rb is None:
                continue
            for m in rb.moves:
                traffic = m.trigger == "traffic"
                rows.append(
                    [
                        r.label,
                        f"{m.at:.0f}",
                        str(m.round),
                        m.pod,
                        m.trigger,
                        m.source,
                        m.target,
                        _rate(m.before) if traffic else _pct(m.before),
                        _rate(m.after) if traffic else _pct(m.after),
                        "-" if traffic else _pct(m.target_after),
                        m.result,
                        (m.landed or "(pending)") + (" (BACK)" if m.landed and m.landed == m.source else "")
                        if m.result == EVICTED
                        else "-",
                    ]
                )
            f = figures(rb)
            skipped = ", ".join(f"{c} {n}" for c, n in sorted(rb.skipped.items())) or "none"
            settle = (
                "-"
                if f.settled != f.settled
                else f"{f.settled:.0f} s, as read from {f.settled_read:.0f} s (first above at {f.first_over:.0f} s)"
            )
            sums.append(
                f"{r.label}: {rb.rounds} rounds (skipped: {skipped}){' dry run' if rb.dry_run else ''}; "
                f"{f.planned} moves planned, {f.evictions} evicted, {f.refused} refused by a budget; "
                f"replacements: {f.replacements} placed, {f.on_target} where planned, "
                f"{f.back_on_source} back on their source, {f.over_target_after} on a NIC that went above "
                f"{_pct(rb.high)}; most pods of one Deployment unavailable at once: {f.most_unavailable}; "
                f"busiest NIC read above {_pct(rb.high)} at {f.read_over} of {len(rb.samples)} steps, "
                f"at or below it for good from {settle}; at the end "
                f"{_pct(f.max_network_end)}"
            )
        note = (
            "Moves (the Rebalancer's rounds: BEFORE / AFTER the trigger's figure at the source without the "
            "pod, TO AFTER the target's with it, as the plan read them; traffic moves in the pod's crossing "
            "bytes/s; REPLACEMENT ON: where the pod its ReplicaSet created went)"
        )
        body = table(head, rows) if rows else "(no moves)"
        return note + "\n" + body + "\n" + "\n".join(sums)

    # ------------------------------------------------------------ JSON

    def to_dict(self) -> dict[str, Any]:
        s = self.scenario
        return {
            "scenario": {
                "name": s.name,
                "source": s.source,
                "seed": s.seed,
                "nodes": len(s.nodes),
                "existingPods": len(s.existing_pods),
                "pods": len(s.pods),
                "podGroups": len(s.pod_groups),
                "arrivalRatePerSecond": s.timing.arrival_rate,
                "durationSeconds": s.end,
                "prometheusOutages": [[a, b] for a, b in s.outages],
                "timeline": [e.describe() for e in s.timeline],
            },
            "lowerBounds": {k: _num(v) for k, v in self.bounds.items()},
            "runs": [self._run_dict(r, c) for r, c in zip(self.runs, self.configs, strict=True)],
        }

    def _run_dict(self, run: Run, config: str) -> dict[str, Any]:
        assert run.before is not None
        counts = self.pods_per_node(run)
        after = _after(run)
        before = run.before.by_resource()
        return {
            "label": run.label,
            "config": config,
            "profile": run.profile,
            "placed": len(run.live()),
            "placements": dict(run.placements),
            "unscheduled": dict(run.unscheduled),
            "polls": run.polls,
            "queries": run.queries,
            "queriesPerPoll": run.queries / run.polls if run.polls else 0.0,
            "queriesWhileScheduling": run.queries_while_scheduling,
            "maxPodsPerNode": max(counts.values(), default=0),
            "spread": {k: v.to_dict() for k, v in self.spread(run).items()},
            "podGroups": [g.to_dict() for g in self.gangs(run)],
            "traffic": run.traffic.to_dict() if run.traffic is not None else None,
            "endSeconds": run.end,
            "timeline": [ph.to_dict() for ph in run.phases],
            "deleted": dict(run.deleted_at),
            "created": dict(run.created_at),
            "rebalancing": run.rebalancing.to_dict() if run.rebalancing is not None else None,
            "nodes": [
                {
                    "name": name,
                    "pods": counts[name],
                    "before": {r: _num(before[r][i]) for r in RESOURCES},
                    "after": {r: _num(after[r][i]) for r in RESOURCES},
                }
                for i, name in enumerate(self.scenario.node_names)
            ],
        }


def _after(run: Run) -> dict[str, FloatArray]:
    loads: Loads | None = run.after
    assert loads is not None
    return loads.by_resource()


def _key(raw: dict[str, Any]) -> str:
    return f"{raw['metadata'].get('namespace') or 'default'}/{raw['metadata']['name']}"


def _num(v: float) -> float | None:
    return None if v != v or math.isinf(v) else round(float(v), 6)


def _pct(v: float) -> str:
    return "-" if v != v else f"{100 * v:.1f}%"


def _ratio_text(v: float) -> str:
    return "-" if v != v else f"{v:.2f}"


def _rate(bytes_per_s: float) -> str:
    if bytes_per_s != bytes_per_s:
        return "-"
    bits = bytes_per_s * 8
    for unit, scale in (("Tbit", 1e12), ("Gbit", 1e9), ("Mbit", 1e6)):
        if bits >= scale:
            return f"{bits / scale:g}{unit}"
    return f"{bits:g}bit"


def table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [head, *rows]]
    return "\n".join(lines)
