"""kube's volume binder: which claims a pod has, how each node can satisfy them, and the
in-memory assumptions that keep two pods from taking the same PersistentVolume.

The logic follows kube's pkg/scheduler/framework/plugins/volumebinding/binder.go
(v1.31): GetPodVolumeClaims, GetEligibleNodes, FindPodVolumes (bound claims'
node affinity, static matching with the smallest PV that fits, then dynamic
provisioning: allowedTopologies and CSIStorageCapacity), AssumePodVolumes /
RevertAssumedPodVolumes, and checkBindings for PreBind's wait.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from netsched.framework import LABEL_HOSTNAME

from ..volumes import (
    ANN_SELECTED_NODE,
    NO_PROVISIONER,
    Capacity,
    Claim,
    ClaimRef,
    StorageClassInfo,
    Volume,
    VolumeObjectError,
    VolumeReader,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
AVAILABLE = "Available"


class BindingError(Exception):
    """A binding that can no longer succeed (claim deleted, provisioning failed, claimRef reset)."""


@dataclass(slots=True)
class PodVolumes:
    """What binding the pod to one node takes: static PVs to bind and claims to provision."""

    static: list[tuple[Volume, Claim]] = field(default_factory=list)
    provision: list[Claim] = field(default_factory=list)
    node_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class PodClaims:
    """kube's PodVolumeClaims: the pod's claims sorted by what binding still needs."""

    bound: list[Claim] = field(default_factory=list)
    delayed: list[Claim] = field(default_factory=list)  # unbound, WaitForFirstConsumer
    immediate: list[Claim] = field(default_factory=list)  # unbound, Immediate (the PV controller's job)
    pvs_by_class: dict[str, list[Volume]] = field(default_factory=dict)
    bound_pvs: dict[str, Volume | None] = field(default_factory=dict)
    # Read once per cycle for the per-node provisioning checks.
    labels: tuple[str, ...] | None = None
    labels_known: bool = False
    classes: dict[str, StorageClassInfo | None] = field(default_factory=dict)
    capacity_drivers: dict[str, bool] = field(default_factory=dict)
    capacities: list[Capacity] | None = None


@dataclass(slots=True)
class NodeFit:
    reasons: list[str]
    volumes: PodVolumes | None


class AssumeCache:
    """Our own writes, visible before the informer brings them back (kube's assume cache).

    An assumed copy stands in for the stored object while the store still holds
    the version it was based on; once the informer delivers any newer version
    (our patch, or someone else's write) the store wins and the copy is dropped.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pvs: dict[str, tuple[str, Volume]] = {}
        self._pvcs: dict[str, tuple[str, Claim]] = {}

    def pv(self, stored: Volume) -> Volume:
        with self._lock:
            got = self._pvs.get(stored.name)
            if got is None:
                return stored
            if got[0] != stored.resource_version:
                del self._pvs[stored.name]
                return stored
            return got[1]

    def pvc(self, stored: Claim) -> Claim:
        with self._lock:
            got = self._pvcs.get(stored.key)
            if got is None:
                return stored
            if got[0] != stored.resource_version:
                del self._pvcs[stored.key]
                return stored
            return got[1]

    def assume_pv(self, base: Volume, assumed: Volume) -> None:
        with self._lock:
            self._pvs[base.name] = (base.resource_version, assumed)

    def assume_pvc(self, base: Claim, assumed: Claim) -> None:
        with self._lock:
            self._pvcs[base.key] = (base.resource_version, assumed)

    def restore_pv(self, name: str) -> None:
        with self._lock:
            self._pvs.pop(name, None)

    def restore_pvc(self, key: str) -> None:
        with self._lock:
            self._pvcs.pop(key, None)


class VolumeBinder:
    """The binder one VolumeBinding instance owns (its reader and assume cache)."""

    def __init__(self, reader: VolumeReader) -> None:
        self.reader = reader
        self.assumed = AssumeCache()

    # ------------------------------------------------------------ reads through the assume cache

    def claim(self, namespace: str, name: str) -> Claim | None:
        got = self.reader.claim(namespace, name)
        return None if got is None else self.assumed.pvc(got)

    def volume(self, name: str) -> Volume | None:
        got = self.reader.volume(name)
        return None if got is None else self.assumed.pv(got)

    def volumes_by_class(
        self, claims: list[Claim], errors: list[VolumeObjectError]
    ) -> dict[str, list[Volume]]:
        """The PVs `claims` could bind, by class: kube's unboundVolumesDelayBinding, without the
        ones no node could give them (claimed by another claim, terminating), which
        FindMatchingVolume would skip on every node anyway."""
        out: dict[str, list[Volume]] = {c.storage_class: [] for c in claims}
        for stored in self.reader.volumes_for(list(out), claims, errors):
            if stored.storage_class not in out:
                continue
            pv = self.assumed.pv(stored)
            if pv.deleting or (pv.claim_ref is not None and not any(pv.bound_to(c) for c in claims)):
                continue
            out[pv.storage_class].append(pv)
        return out

    # ------------------------------------------------------------ PreFilter

    def is_delayed(self, claim: Claim) -> bool:
        """kube's IsDelayBindingMode: a missing class is Immediate (the claim then waits for one)."""
        if not claim.storage_class:
            return False
        cls = self.reader.storage_class(claim.storage_class)
        return cls is not None and cls.wait_for_first_consumer

    def eligible_nodes(self, claims: PodClaims) -> set[str] | None:
        """kube's GetEligibleNodes: local PVs pinned with kubernetes.io/hostname In narrow the nodes."""
        eligible: set[str] | None = None
        for claim in claims.bound:
            pv = claims.bound_pvs.get(claim.volume_name)
            names = _local_node_names(pv) if pv is not None else set()
            if names:
                eligible = set(names) if eligible is None else eligible & names
        return eligible

    # ------------------------------------------------------------ Filter

    def relevant_labels(self, claims: PodClaims) -> tuple[str, ...] | None:
        """The node labels the answer of find_pod_volumes depends on, or None when it also
        depends on the node's name (matchFields, a claim's selected-node)."""
        if claims.labels_known:
            return claims.labels
        claims.labels_known = True
        keys: set[str] = set()
        volumes = [pv for pv in claims.bound_pvs.values() if pv is not None]
        volumes += [pv for pvs in claims.pvs_by_class.values() for pv in pvs]
        for pv in volumes:
            for term in pv.node_affinity.terms if pv.node_affinity is not None else ():
                if term.match_fields:
                    return None
                keys.update(r.key for r in term.match_expressions)
        for claim in claims.delayed:
            if claim.selected_node is not None:
                return None
            if not claim.storage_class:
                continue
            if claim.storage_class not in claims.classes:
                claims.classes[claim.storage_class] = self.reader.storage_class(claim.storage_class)
            cls = claims.classes[claim.storage_class]
            if cls is None:
                continue
            keys.update(k for term in cls.allowed_topologies for k, _ in term)
            try:
                driver = self.reader.csi_driver(cls.provisioner) if cls.provisioner else None
            except VolumeObjectError:
                return None  # the per-node path reports it
            if driver is not None and driver.storage_capacity:
                if claims.capacities is None:
                    claims.capacities = self.reader.capacities()
                for c in claims.capacities:
                    if c.node_topology is not None:
                        keys.update(k for k, _ in c.node_topology.match_labels)
                        keys.update(r.key for r in c.node_topology.match_expressions)
        claims.labels = tuple(sorted(keys))
        return claims.labels

    def find_pod_volumes(self, claims: PodClaims, node_name: str, labels: Mapping[str, str]) -> NodeFit:
        """kube's FindPodVolumes for one node: the reasons it cannot hold the pod's volumes, or
        the bindings and provisions that make it work. Raises on a fault (kube's error return)."""
        bound_ok = bound_found = unbound_ok = enough_space = True
        volumes = PodVolumes(node_labels=labels)
        for claim in claims.bound:
            pv = claims.bound_pvs.get(claim.volume_name)
            if pv is None:
                bound_found = False
                break
            if not pv.node_affinity_matches(labels, node_name):
                bound_ok = False
                break
        if bound_ok and bound_found and claims.delayed:
            to_match: list[Claim] = []
            to_provision: list[Claim] = []
            for claim in claims.delayed:
                selected = claim.selected_node
                if selected is not None:
                    if selected != node_name:
                        unbound_ok = False
                        break
                    to_provision.append(claim)
                else:
                    to_match.append(claim)
            if unbound_ok:
                if to_match:
                    unbound_ok, volumes.static, left = _find_matching(to_match, claims, node_name, labels)
                    to_provision.extend(left)
                if to_provision:
                    unbound_ok, enough_space = self._check_provisions(claims, to_provision, labels)
                    volumes.provision = to_provision
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not enough_space:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not bound_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return NodeFit(reasons, None if reasons else volumes)

    def _check_provisions(
        self, pod_claims: PodClaims, claims: list[Claim], labels: Mapping[str, str]
    ) -> tuple[bool, bool]:
        """kube's checkVolumeProvisions: (provisioning possible, enough storage)."""
        for claim in claims:
            if not claim.storage_class:
                raise BindingError(f'no class for claim "{claim.key}"')
            if claim.storage_class not in pod_claims.classes:
                pod_claims.classes[claim.storage_class] = self.reader.storage_class(claim.storage_class)
            cls = pod_claims.classes[claim.storage_class]
            if cls is None:
                raise BindingError(f'failed to find storage class "{claim.storage_class}"')
            if not cls.provisioner or cls.provisioner == NO_PROVISIONER:
                return False, True
            if not cls.topology_allows(labels):
                return False, True
            if not self._enough_capacity(pod_claims, cls.provisioner, claim, labels):
                return True, False
        return True, True

    def _enough_capacity(
        self, pod_claims: PodClaims, provisioner: str, claim: Claim, labels: Mapping[str, str]
    ) -> bool:
        """kube's hasEnoughCapacity (only for CSI drivers with storageCapacity: true), with the
        driver and the capacities read once per cycle."""
        if claim.request is None:
            return True
        tracked = pod_claims.capacity_drivers.get(provisioner)
        if tracked is None:
            driver = self.reader.csi_driver(provisioner)
            tracked = pod_claims.capacity_drivers[provisioner] = (
                driver is not None and driver.storage_capacity
            )
        if not tracked:
            return True
        if pod_claims.capacities is None:
            pod_claims.capacities = self.reader.capacities()
        return _capacity_fits(pod_claims.capacities, claim, labels)

    # ------------------------------------------------------------ Reserve / Unreserve

    def assume(self, volumes: PodVolumes, node_name: str) -> bool:
        """kube's AssumePodVolumes; True when nothing is left to bind. Rewrites `volumes` to the
        assumed copies, which PreBind writes."""
        if not volumes.static and not volumes.provision:
            return True
        static = []
        for pv, claim in volumes.static:
            ref = ClaimRef(claim.namespace, claim.name, claim.uid)
            assumed = pv if pv.claim_ref == ref else dataclasses.replace(pv, claim_ref=ref)
            self.assumed.assume_pv(pv, assumed)
            static.append((assumed, claim))
        provision = []
        for claim in volumes.provision:
            annotations = {**claim.annotations, ANN_SELECTED_NODE: node_name}
            assumed_claim = dataclasses.replace(claim, annotations=annotations)
            self.assumed.assume_pvc(claim, assumed_claim)
            provision.append(assumed_claim)
        volumes.static, volumes.provision = static, provision
        return False

    def revert(self, volumes: PodVolumes) -> None:
        for pv, _ in volumes.static:
            self.assumed.restore_pv(pv.name)
        for claim in volumes.provision:
            self.assumed.restore_pvc(claim.key)

    # ------------------------------------------------------------ PreBind's wait

    def check_bindings(self, volumes: PodVolumes, node_name: str, written: Mapping[str, str]) -> bool:
        """kube's checkBindings, against the informer's copies: True when every claim is fully
        bound, False to keep waiting, BindingError when it can no longer happen. `written` maps
        "pv/NAME" / "pvc/NS/NAME" to the resourceVersion our patch returned."""
        labels = volumes.node_labels
        for pv, claim in volumes.static:
            api_pv = self.reader.volume(pv.name)
            if api_pv is None:
                raise BindingError(f'failed to check binding: persistentvolume "{pv.name}" not found')
            api_pvc = self.reader.claim(claim.namespace, claim.name)
            if api_pvc is None:
                raise BindingError(f'failed to check binding: persistentvolumeclaim "{claim.key}" not found')
            if _older(api_pv.resource_version, written.get(f"pv/{pv.name}")):
                return False
            if not api_pv.node_affinity_matches(labels, node_name):
                raise BindingError(f'pv "{pv.name}" node affinity doesn\'t match node "{node_name}"')
            # kube also requires claimRef.uid; a claim without a uid (hand-made objects) cannot give one.
            if api_pv.claim_ref is None or (not api_pv.claim_ref.uid and claim.uid):
                raise BindingError(f'ClaimRef got reset for pv "{pv.name}"')
            if not api_pvc.fully_bound:
                return False
        for claim in volumes.provision:
            api_pvc = self.reader.claim(claim.namespace, claim.name)
            if api_pvc is None:
                raise BindingError(
                    f'failed to check provisioning pvc: persistentvolumeclaim "{claim.key}" not found'
                )
            if _older(api_pvc.resource_version, written.get(f"pvc/{claim.key}")):
                return False
            if api_pvc.selected_node is None:
                raise BindingError(f'selectedNode annotation reset for PVC "{claim.name}"')
            if api_pvc.selected_node != node_name:
                raise BindingError(f'provisioning failed for PVC "{claim.name}"')
            if api_pvc.volume_name:
                api_pv = self.reader.volume(api_pvc.volume_name)
                if api_pv is None:
                    return False  # not seen yet; an unbound claim comes back unbound
                if not api_pv.node_affinity_matches(labels, node_name):
                    raise BindingError(f'pv "{api_pv.name}" node affinity doesn\'t match node "{node_name}"')
            if not api_pvc.fully_bound:
                return False
        return True


def _capacity_fits(capacities: list[Capacity], claim: Claim, labels: Mapping[str, str]) -> bool:
    size = claim.request or 0
    return any(
        c.storage_class == claim.storage_class and c.fits(size) and c.reaches(labels) for c in capacities
    )


def _older(stored: str, written: str | None) -> bool:
    """The informer's copy predates our write (kube's CompareResourceVersion > 0)."""
    if not written:
        return False
    try:
        return int(stored or 0) < int(written)
    except ValueError:
        return stored != written


def _local_node_names(pv: Volume) -> set[str]:
    """kube's GetLocalPersistentVolumeNodeNames: hostname In values, intersected in a term,
    unioned over terms (terms without one add nothing)."""
    if pv.node_affinity is None:
        return set()
    out: set[str] = set()
    for term in pv.node_affinity.terms:
        nodes: set[str] | None = None
        for r in term.match_expressions:
            if r.key == LABEL_HOSTNAME and r.operator == "In":
                nodes = set(r.values) if nodes is None else nodes & set(r.values)
        out |= nodes or set()
    return out


def _find_matching(
    to_match: list[Claim], claims: PodClaims, node_name: str, labels: Mapping[str, str]
) -> tuple[bool, list[tuple[Volume, Claim]], list[Claim]]:
    """kube's findMatchingVolumes: smallest request first, each claim the smallest fitting PV
    not chosen yet; (all matched, bindings, claims left for provisioning)."""
    chosen: set[str] = set()
    bindings: list[tuple[Volume, Claim]] = []
    left: list[Claim] = []
    for claim in to_match:  # PreFilter sorted the delayed claims by request
        pv = find_matching_volume(
            claim, claims.pvs_by_class.get(claim.storage_class, []), node_name, labels, chosen
        )
        if pv is None:
            left.append(claim)
            continue
        chosen.add(pv.name)
        bindings.append((pv, claim))
    return not left, bindings, left


def find_matching_volume(
    claim: Claim, volumes: list[Volume], node_name: str, labels: Mapping[str, str], excluded: set[str]
) -> Volume | None:
    """kube's FindMatchingVolume on the scheduler path: a PV pre-bound to the claim wins
    (if its node affinity fits); otherwise the smallest Available PV of the claim's class
    whose size, volume mode, selector, access modes and node affinity fit."""
    requested = claim.request or 0
    best: Volume | None = None
    for pv in volumes:
        if pv.name in excluded:
            continue
        if pv.claim_ref is not None and not pv.bound_to(claim):
            continue
        if pv.capacity < requested or pv.volume_mode != claim.volume_mode or pv.deleting:
            continue
        affinity_ok = pv.node_affinity_matches(labels, node_name)
        if pv.bound_to(claim):
            return pv if affinity_ok else None
        if pv.phase != AVAILABLE:
            continue
        if claim.selector is not None and not claim.selector.matches(pv.labels):
            continue
        if pv.storage_class != claim.storage_class or not affinity_ok:
            continue
        if not claim.access_modes <= pv.access_modes:
            continue
        if best is None or pv.capacity < best.capacity:
            best = pv
    return best
