"""coordination.k8s.io/v1 Lease reads and writes, for leader election.

The elector (netsched.leaderelection) needs three calls: get, create and a
resourceVersion-guarded replace. It depends on the small LeaseClient protocol
below; tests give it an in-memory store, production this module's
KubeLeaseClient. Errors are netsched.kube.errors classes: Conflict (409) on a
stale write or a create that lost the race, ApiError for the rest.

The calls go through KubeClient.request, as every other request netsched
makes, with the JSON built here: the generated client's V1Lease model would
turn renewTime into a datetime and back with isoformat(), so
"12:00:00.000000Z" would leave as "12:00:00+00:00", a MicroTime the API
server refuses (it wants all six fraction digits).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

from netsched.kube.errors import NotFound

if TYPE_CHECKING:
    from netsched.kube.client import JsonObj, KubeClient


_API_VERSION = "coordination.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The leader-election view of a Lease spec (client-go's LeaderElectionRecord).

    Times are kept as the strings the server returned: the elector compares
    records for change and never does arithmetic on remote timestamps.
    """

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0

    @classmethod
    def from_spec(cls, spec: JsonObj) -> LeaseRecord:
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> JsonObj:
        spec: JsonObj = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.lease_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time is not None:
            spec["renewTime"] = self.renew_time
        return spec


@dataclass(frozen=True, slots=True)
class Lease:
    """A Lease as read: its record, resourceVersion and the raw object (kept so a
    replace preserves labels, annotations and fields we do not model)."""

    namespace: str
    name: str
    record: LeaseRecord
    resource_version: str
    raw: JsonObj = field(repr=False, compare=False)

    @classmethod
    def from_object(cls, obj: JsonObj) -> Lease:
        meta = obj.get("metadata") or {}
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            record=LeaseRecord.from_spec(obj.get("spec") or {}),
            resource_version=str(meta.get("resourceVersion") or ""),
            raw=obj,
        )


class LeaseClient(Protocol):
    """What the elector needs. `timeout` bounds each call in seconds, so a hung
    API server cannot hold the elector past its renew deadline."""

    def get(self, namespace: str, name: str, timeout: float) -> Lease | None:
        """The Lease, or None if it does not exist."""
        ...

    def create(self, namespace: str, name: str, record: LeaseRecord, timeout: float) -> Lease:
        """Create it; Conflict (AlreadyExists) if another candidate created it first."""
        ...

    def replace(self, lease: Lease, record: LeaseRecord, timeout: float) -> Lease:
        """Replace the spec of `lease`; Conflict if it changed since it was read."""
        ...


class KubeLeaseClient:
    """LeaseClient over a KubeClient, one attempt per call (the elector has its own cadence).

    Give it a KubeClient of its own, without a rate limit, as kube-scheduler
    gives leader election its own client: renewals must never queue behind a
    burst of bindings and events (`derived_client(shared, pool_size=1, qps=0)`,
    as netsched.serve does). The ApiClient must not let urllib3 retry
    (build_api_client turns that off), or one call could outlive its timeout
    several times over.
    """

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def get(self, namespace: str, name: str, timeout: float) -> Lease | None:
        try:
            reply = self._client.request(
                "get", "leases", "GET", _lease_path(namespace, name), retry=False, timeout=_positive(timeout)
            )
        except NotFound:
            return None
        return Lease.from_object(reply.body)

    def create(self, namespace: str, name: str, record: LeaseRecord, timeout: float) -> Lease:
        body: JsonObj = {
            "apiVersion": _API_VERSION,
            "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace},
            "spec": record.to_spec(),
        }
        return self._write("create", "POST", _lease_path(namespace), body, timeout)

    def replace(self, lease: Lease, record: LeaseRecord, timeout: float) -> Lease:
        body = dict(lease.raw)
        body["metadata"] = dict(lease.raw.get("metadata") or {}, resourceVersion=lease.resource_version)
        body["spec"] = record.to_spec()
        return self._write("update", "PUT", _lease_path(lease.namespace, lease.name), body, timeout)

    def _write(self, verb: str, method: str, path: str, body: JsonObj, timeout: float) -> Lease:
        reply = self._client.request(
            verb, "leases", method, path, body=body, retry=False, timeout=_positive(timeout)
        )
        return Lease.from_object(reply.body)


def _lease_path(namespace: str, name: str = "") -> str:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{quote(namespace, safe='')}/leases"
    return f"{path}/{quote(name, safe='')}" if name else path


def _positive(timeout: float) -> float:
    # urllib3 reads 0 as "no timeout"; a spent budget must never mean "wait forever".
    return max(0.05, timeout)
