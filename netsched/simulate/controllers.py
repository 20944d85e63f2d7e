"""Kube's Deployment and ReplicaSet controllers, as much of them as a simulation needs.

The ReplicaSet controller keeps each ReplicaSet's live pods at its
spec.replicas: a Deployment pod that is deleted (evicted, preempted, or
deleted by a rollout) is replaced by a new, unbound pod of the same template
under a new name, and extra pods are deleted in kube's order (unbound, then
not ready, then those sharing a node with more of their ReplicaSet's pods,
then the most recently ready, then the newest).  The Deployment controller
rolls a template out as kube's does:

- Recreate: every old ReplicaSet is scaled to 0; once none of its pods is
  left, the new one is scaled to the Deployment's replicas;
- RollingUpdate: the new ReplicaSet is scaled up while all pods stay within
  replicas + maxSurge; old ones are scaled down while the available pods stay
  at least replicas - maxUnavailable (unhealthy old pods first), the
  arithmetic of kube's reconcileNewReplicaSet / reconcileOldReplicaSets.

A pod is Ready `podStartSeconds` after it is bound and available
`minReadySeconds` after that.  Pods are created with InMemoryCluster.add_pod
and deleted with InMemoryCluster.delete_pod, through the scheduler's real
cache and queue, as a watch would deliver them; the cluster's on_deleted
callbacks tell the controllers (and the load model) of every deletion,
whoever made it.  The ReplicaSets are kept in the cluster's object store
("apps/replicasets") with their spec.replicas, for readers that want the
declared replica count.
"""

from __future__ import annotations

import copy
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from netsched.framework.disruption import REPLICASETS_KEY
from netsched.framework.parse import parse_pod
from netsched.inmemory import InMemoryCluster
from netsched.simulate.timeline import RECREATE, Rollout
from netsched.simulate.workloads import RESTARTED_AT, Deployment, owned_pod, template_hash


@dataclass
class SimPod:
    key: str
    raw: dict[str, Any]  # as created (unbound)
    created: float
    bound: float | None = None
    node: str = ""
    deleted: float | None = None

    @property
    def live(self) -> bool:
        return self.deleted is None


@dataclass
class ReplicaSet:
    pod_hash: str
    template: dict[str, Any]
    replicas: int  # spec.replicas
    created: float
    pods: list[SimPod] = field(default_factory=list)
    expected: set[str] = field(default_factory=set)  # the scenario's pods still to arrive

    def live(self) -> list[SimPod]:
        return [p for p in self.pods if p.live]


@dataclass
class _Deployment:
    spec: Deployment
    sets: list[ReplicaSet]  # oldest first; the last is the current one
    rollout: Rollout | None = None
    entry: int = -1  # the timeline entry whose rollout this is


class Controllers:
    def __init__(
        self,
        cluster: InMemoryCluster,
        deployments: list[Deployment],
        prepare: Callable[[dict[str, Any]], dict[str, Any]],
        pod_start_seconds: float,
    ) -> None:
        """`prepare`: what the simulation does to a pod before creating it (its scheduler)."""
        self.cluster = cluster
        self.prepare = prepare
        self.start = pod_start_seconds
        self.deployments: dict[str, _Deployment] = {}
        self.owner: dict[str, tuple[_Deployment, ReplicaSet]] = {}  # pod key -> its ReplicaSet
        self.names: set[str] = set()  # every pod key in use
        self.open: dict[int, set[str]] = {}  # timeline entry -> Deployments still rolling out
        self.completed: dict[int, float] = {}  # timeline entry -> when its rollout completed
        self.deleting: set[str] = set()  # pods this controller is deleting right now
        self.created: dict[str, float] = {}  # pods it created -> when
        for d in deployments:
            rs = ReplicaSet(d.template_hash, copy.deepcopy(dict(d.template)), d.replicas, -math.inf)
            rs.expected = set(d.pods)
            state = _Deployment(d, [rs])
            self.deployments[d.key] = state
            for key in d.pods:
                self.owner[key] = (state, rs)
                self.names.add(key)
            self._publish(state, rs)

    # ------------------------------------------------------------ what happened

    def arrived(self, raw: Mapping[str, Any], t: float) -> bool:
        """A scenario pod is created at t; False when its ReplicaSet no longer wants it (scaled
        down before it arrived): the simulation then does not create it."""
        key = _key(raw)
        owner = self.owner.get(key)
        if owner is None:
            return True
        rs = owner[1]
        if key not in rs.expected:
            return False
        rs.expected.discard(key)
        rs.pods.append(SimPod(key, dict(raw), t))
        return True

    def existing(self, raw: Mapping[str, Any]) -> None:
        """A scenario pod running from the start (existingPods)."""
        if self.arrived(raw, -math.inf):
            pod = self._pod(_key(raw))
            if pod is not None:
                pod.bound, pod.node = -math.inf, str(raw["spec"]["nodeName"])

    def bound(self, key: str, node: str, t: float) -> None:
        pod = self._pod(key)
        if pod is not None:
            pod.bound, pod.node = t, node

    def deleted(self, key: str, t: float) -> None:
        pod = self._pod(key)
        if pod is not None and pod.deleted is None:
            pod.deleted = t

    def _pod(self, key: str) -> SimPod | None:
        owner = self.owner.get(key)
        if owner is None:
            return None
        return next((p for p in owner[1].pods if p.key == key), None)

    # ------------------------------------------------------------ rollouts

    def rollout(self, entry: int, rollout: Rollout, t: float) -> None:
        """`kubectl rollout restart` of the rollout's Deployments at t."""
        self.open[entry] = set()
        for key in rollout.workloads:
            d = self.deployments[key]
            if d.entry >= 0:
                self.open.get(d.entry, set()).discard(key)  # a newer rollout takes over
            template = copy.deepcopy(d.sets[-1].template)
            template.setdefault("metadata", {}).setdefault("annotations", {})[RESTARTED_AT] = f"{t:g}s"
            d.sets.append(ReplicaSet(template_hash(template), template, 0, t))
            d.rollout, d.entry = rollout, entry
            self.open[entry].add(key)

    def rolling(self) -> bool:
        return any(self.open.values())

    # ------------------------------------------------------------ the control loops

    def sync(self, t: float) -> bool:
        """One pass of both controllers at t; True when anything was created or deleted."""
        changed = False
        for d in self.deployments.values():
            if d.rollout is not None:
                self._roll(d, t)
            for rs in d.sets:
                changed |= self._reconcile(d, rs, t)
            if d.rollout is not None and self._complete(d, t):
                self.open.get(d.entry, set()).discard(d.spec.key)
                d.rollout = None
        for entry, left in self.open.items():
            if not left and entry not in self.completed:
                self.completed[entry] = t
        return changed

    def next_wakeup(self, t: float) -> float:
        """The next time after t a pod of a rolling Deployment becomes Ready or available."""
        out = math.inf
        for d in self.deployments.values():
            if d.rollout is None:
                continue
            for rs in d.sets:
                for p in rs.live():
                    if p.bound is None:
                        continue
                    for when in (p.bound + self.start, p.bound + self.start + d.rollout.min_ready_seconds):
                        if when > t:
                            out = min(out, when)
        return out

    def _available(self, d: _Deployment, rs: ReplicaSet, t: float) -> int:
        wait = self.start + (d.rollout.min_ready_seconds if d.rollout is not None else 0.0)
        return sum(1 for p in rs.live() if p.bound is not None and p.bound + wait <= t)

    def _roll(self, d: _Deployment, t: float) -> None:
        assert d.rollout is not None
        new, old = d.sets[-1], d.sets[:-1]
        want = d.spec.replicas
        if d.rollout.strategy == RECREATE:
            for rs in old:
                rs.replicas = 0
            if not any(rs.live() or rs.expected for rs in old):
                new.replicas = want
            return
        surge, unavailable = d.rollout.fenceposts(want)
        total = sum(rs.replicas for rs in d.sets)
        if new.replicas < want and total < want + surge:
            new.replicas += min(want + surge - total, want - new.replicas)
        if not any(rs.replicas for rs in old):
            return
        min_available = want - unavailable
        new_unavailable = new.replicas - self._available(d, new, t)
        room = sum(rs.replicas for rs in d.sets) - min_available - new_unavailable
        if room <= 0:
            return
        cleaned = 0  # old pods that are not available go first: that costs no availability
        for rs in sorted(old, key=lambda r: r.created):
            unhealthy = rs.replicas - self._available(d, rs, t)
            if cleaned >= room or rs.replicas == 0 or unhealthy <= 0:
                continue
            step = min(room - cleaned, unhealthy)
            rs.replicas -= step
            cleaned += step
        available = sum(self._available(d, rs, t) for rs in d.sets)
        down = available - min_available
        for rs in sorted(old, key=lambda r: r.created):
            if down <= 0:
                break
            step = min(rs.replicas, down)
            rs.replicas -= step
            down -= step

    def _complete(self, d: _Deployment, t: float) -> bool:
        new, old = d.sets[-1], d.sets[:-1]
        want = d.spec.replicas
        return (
            new.replicas == want
            and self._available(d, new, t) == want
            and not any(rs.replicas or rs.live() for rs in old)
        )

    def _reconcile(self, d: _Deployment, rs: ReplicaSet, t: float) -> bool:
        """The ReplicaSet controller: create or delete pods until live + expected = replicas."""
        live = rs.live()
        diff = len(live) + len(rs.expected) - rs.replicas
        if diff == 0:
            return False
        if diff < 0:
            for _ in range(-diff):
                self._create(d, rs, t)
        else:
            while diff and rs.expected:  # not arrived yet: never created
                rs.expected.pop()
                diff -= 1
            for pod in sorted(live, key=lambda p: self._deletion_rank(rs, p, t))[:diff]:
                self._delete(pod)
        self._publish(d, rs)
        return True

    def _deletion_rank(self, rs: ReplicaSet, p: SimPod, t: float) -> tuple[float, ...]:
        """Sort key, first deleted first (kube's ActivePodsWithRanks)."""
        on_node = Counter(q.node for q in rs.live() if q.bound is not None)
        if p.bound is None:
            return (0, 0, 0, 0, -p.created)
        ready_at = p.bound + self.start
        ready = ready_at <= t
        return (1, int(ready), -on_node[p.node], -ready_at if ready else 0.0, -p.created)

    def _create(self, d: _Deployment, rs: ReplicaSet, t: float) -> None:
        name = self._name(d.spec.namespace, f"{d.spec.name}-{rs.pod_hash}")
        raw = self.prepare(owned_pod(rs.template, d.spec.namespace, name, d.spec.name, rs.pod_hash))
        key = _key(raw)
        self.names.add(key)
        self.owner[key] = (d, rs)
        rs.pods.append(SimPod(key, raw, t))
        self.created[key] = t
        self.cluster.add_pod(copy.deepcopy(raw))

    def _delete(self, pod: SimPod) -> None:
        info = self.cluster.cache.get_pod(str(pod.raw["metadata"]["uid"])) or parse_pod(pod.raw)
        self.deleting.add(pod.key)
        try:
            self.cluster.delete_pod(info)
        finally:
            self.deleting.discard(pod.key)

    def _name(self, namespace: str, prefix: str) -> str:
        i = 0
        while f"{namespace}/{prefix}-{i:02d}" in self.names:
            i += 1
        return f"{prefix}-{i:02d}"

    def _publish(self, d: _Deployment, rs: ReplicaSet) -> None:
        obj = d.spec.replica_set_object(rs.pod_hash, rs.replicas, rs.template)
        obj["status"] = {"replicas": len(rs.live())}
        self.cluster.add_object(REPLICASETS_KEY, obj, "MODIFIED")

    # ------------------------------------------------------------ inspection

    def pods_of(self, key: str) -> list[SimPod]:
        """Every pod a Deployment ("namespace/name") has had, oldest ReplicaSet first."""
        return [p for rs in self.deployments[key].sets for p in rs.pods]

    def available(self, key: str, t: float) -> int:
        d = self.deployments[key]
        return sum(self._available(d, rs, t) for rs in d.sets)


def _key(raw: Mapping[str, Any]) -> str:
    meta = raw["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"
