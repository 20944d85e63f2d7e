"""The scheduler's requests to the API server: bind, delete, evict, status patches, list and watch.

`KubeAPI` implements framework.seams.ClusterAPI (what plugins may ask
for) plus the writes the scheduler itself makes and the list/watch its
reflectors run. Everything is raw JSON through KubeClient, so requests are
rate limited, transient failures retried and errors mapped to
netsched.kube.errors.

List, watch and reflector are written once for every kind: they take a
netsched.kube.resources.Resource (NODES, PODS, ...) and GET its REST path,
so a new kind, or a CRD, is a table entry there.

Every request takes KubeClient's lean path (`request` / `stream`): the REST
path and JSON body are built here, never through the generated API methods,
whose per-call validation and serialisation cost more CPU than the request.
For a binding only the HTTP status matters (the generated method would fail
to decode the Status reply, an upstream bug); 409 means the pod is already
bound, and the caller decides what that means.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

from netsched.clock import Clock, SystemClock, rfc3339
from netsched.framework.disruption import EvictionOutcome
from netsched.framework.types import PodInfo
from netsched.kube.client import JSON, JsonObj, KubeClient
from netsched.kube.errors import ApiError, Conflict, Forbidden, Gone, NotFound
from netsched.kube.eviction import accepted, eviction_body, outcome_of
from netsched.kube.reflector import (
    EventHandler,
    ExponentialBackoff,
    ObjectList,
    Reflector,
    SyncHandler,
    WatchStream,
)
from netsched.kube.resources import Resource

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_WATCH_READ_SLACK = 30  # seconds a watch read may stay silent beyond its timeoutSeconds


class RawWatch:
    """A WatchStream over the urllib3 response of a watch request."""

    def __init__(self, resp: Any) -> None:
        self._resp = resp
        self._lock = threading.Lock()
        self._closed = False

    def chunks(self) -> Iterator[bytes]:
        resp = self._resp
        if resp.chunked and resp.supports_chunked_reads():
            # Each chunk as soon as it arrives; a watch sends one event (or a batch) per chunk.
            yield from resp.stream(65536)
            return
        while chunk := resp.read1(65536):
            yield chunk

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        resp = self._resp
        if not resp.isclosed():
            # shutdown() wakes a read blocked in another thread; close() alone would not.
            with contextlib.suppress(Exception):
                resp.shutdown()
            with contextlib.suppress(Exception):
                resp.close()
        with contextlib.suppress(Exception):
            resp.release_conn()


class KubeAPI:
    """ClusterAPI over the real API server, plus the reads and the list/watch the scheduler makes."""

    synchronous = False  # every write is a request: callers keep them off their hot threads

    def __init__(self, client: KubeClient, *, clock: Clock | None = None, page_size: int = 500) -> None:
        self._client = client
        self._clock: Clock = clock or SystemClock()
        self.page_size = page_size

    @property
    def client(self) -> KubeClient:
        return self._client

    # --- ClusterAPI ----------------------------------------------------------

    def bind(self, pod: PodInfo, node_name: str) -> None:
        """POST pods/binding. Raises Conflict if the pod is already bound (to any node)."""
        meta: JsonObj = {"name": pod.name, "namespace": pod.namespace}
        if pod.uid:
            meta["uid"] = pod.uid  # the server refuses to bind a re-created pod of the same name
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        path = _pod_path(pod.namespace, pod.name, "binding")
        attempts = 0

        def post(**kwargs: Any) -> Any:
            nonlocal attempts
            attempts += 1
            return self._client.send("POST", path, (), body, JSON, **kwargs)

        try:
            reply = self._client.call("create", "pods/binding", post)
        except Conflict:
            # A retried POST may find the binding its own unanswered first attempt made.
            if attempts > 1 and self._bound_to(pod, node_name):
                log.info("Bind had succeeded on an earlier attempt pod=%s node=%s", pod.key, node_name)
                return
            raise
        if reply.status != 201:
            log.debug(
                "Bind returned an unusual status pod=%s node=%s status=%d", pod.key, node_name, reply.status
            )

    def delete_pod(self, pod: PodInfo, grace_period_seconds: int | None = None) -> None:
        """Delete the pod (preemption); already gone, or replaced by a namesake, counts as done."""
        query: list[tuple[str, Any]] = []
        if grace_period_seconds is not None:
            query.append(("gracePeriodSeconds", grace_period_seconds))
        body = {"preconditions": {"uid": pod.uid}} if pod.uid else None
        try:
            self._client.request(
                "delete", "pods", "DELETE", _pod_path(pod.namespace, pod.name), query=query, body=body
            )
        except NotFound:
            log.debug("Pod to delete is already gone pod=%s", pod.key)
        except Conflict:
            log.debug("Pod to delete was replaced by a namesake pod=%s uid=%s", pod.key, pod.uid)

    def evict(self, pod: PodInfo, *, dry_run: bool = False) -> EvictionOutcome:
        """POST a policy/v1 Eviction to pods/NAME/eviction (RBAC: create on pods/eviction) with
        the pod's uid as a precondition; `dry_run` asks the server to check it and change nothing.

        A PodDisruptionBudget's refusal (429) comes back as REFUSED and is not repeated here:
        the caller tries again later. Transient failures (a 429 without a budget cause, 5xx,
        timeouts) are retried as every request is; a retry that finds the pod gone after an
        unanswered first attempt reports GONE, though that attempt may have been the eviction.
        Other errors are raised (Forbidden when RBAC does not allow evictions).
        """
        path = _pod_path(pod.namespace, pod.name, "eviction")
        try:
            self._client.request(
                "create", "pods/eviction", "POST", path, body=eviction_body(pod, dry_run=dry_run)
            )
        except ApiError as e:
            outcome = outcome_of(e)
            if outcome is None:
                raise
            log.debug(
                "Eviction not done pod=%s result=%s message=%s", pod.key, outcome.result.value, e.message
            )
            return outcome
        log.debug("Evicted pod pod=%s dryRun=%s", pod.key, dry_run)
        return accepted(dry_run)

    def set_nominated_node_name(self, pod: PodInfo, node_name: str) -> None:
        """Merge-patch status.nominatedNodeName; "" clears it."""
        body = {"status": {"nominatedNodeName": node_name or None}}
        self._patch_status(pod, body, MERGE_PATCH)

    def patch_object(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        subresource: str = "",
    ) -> JsonObj:
        """Merge-patch one object (or its subresource) of any kind: a CRD's status, PV claimRef..."""
        where = resource.where(namespace=namespace) if resource.namespaced else resource
        path = f"{where.path}/{quote(name, safe='')}" + (f"/{subresource}" if subresource else "")
        label = f"{resource.plural}/{subresource}" if subresource else resource.plural
        return self._client.request(
            "patch", label, "PATCH", path, body=dict(patch), content_type=MERGE_PATCH
        ).body

    def update_pod_condition(
        self, pod: PodInfo, condition: Mapping[str, Any], *, nominated_node_name: str | None = None
    ) -> None:
        """Set a pod condition (default type PodScheduled), in one write with nominatedNodeName if given.

        Like kube-scheduler, nothing is sent when the pod already carries the same
        condition (status, reason, message) and the nomination does not change;
        lastTransitionTime only moves when the status changes.
        """
        cond: JsonObj = {"type": "PodScheduled", **condition}
        existing = _find_condition(pod.raw, str(cond["type"]))
        nominate = nominated_node_name is not None and nominated_node_name != pod.nominated_node_name
        if existing is not None and not nominate and _same_condition(existing, cond):
            log.debug("Pod condition unchanged, not patching pod=%s type=%s", pod.key, cond["type"])
            return
        if "lastTransitionTime" not in cond:
            same_status = existing is not None and existing.get("status") == cond.get("status")
            kept = existing.get("lastTransitionTime") if existing is not None and same_status else None
            cond["lastTransitionTime"] = kept or rfc3339(self._clock.wall())
        status: JsonObj = {"conditions": [cond]}
        if nominate:
            status["nominatedNodeName"] = nominated_node_name or None
        self._patch_status(pod, {"status": status}, STRATEGIC_MERGE_PATCH)

    def patch_pod_annotations(self, pod: PodInfo, annotations: Mapping[str, str | None]) -> None:
        """Merge-patch metadata.annotations; a None value removes that annotation."""
        body = {"metadata": {"annotations": dict(annotations)}}
        path = _pod_path(pod.namespace, pod.name)
        self._client.request("patch", "pods", "PATCH", path, body=body, content_type=MERGE_PATCH)

    def _patch_status(self, pod: PodInfo, body: JsonObj, content_type: str) -> None:
        path = _pod_path(pod.namespace, pod.name, "status")
        self._client.request("patch", "pods/status", "PATCH", path, body=body, content_type=content_type)

    def _bound_to(self, pod: PodInfo, node_name: str) -> bool:
        try:
            current = self.get_pod(pod.namespace, pod.name)
        except NotFound:
            return False
        meta = current.get("metadata") or {}
        same_pod = not pod.uid or meta.get("uid") == pod.uid
        return same_pod and (current.get("spec") or {}).get("nodeName") == node_name

    # --- reads ---------------------------------------------------------------

    def get_object(self, resource: Resource, namespace: str, name: str) -> JsonObj | None:
        """GET one object of any kind; None on 404."""
        where = resource.where(namespace=namespace) if resource.namespaced else resource
        try:
            return self._client.request(
                "get", resource.plural, "GET", f"{where.path}/{quote(name, safe='')}"
            ).body
        except NotFound:
            return None

    def get_node(self, name: str) -> JsonObj:
        return self._client.request("get", "nodes", "GET", f"/api/v1/nodes/{quote(name, safe='')}").body

    def get_pod(self, namespace: str, name: str) -> JsonObj:
        return self._client.request("get", "pods", "GET", _pod_path(namespace, name)).body

    def unserved(self, resource: Resource, *, retry: bool = True) -> str:
        """Why the API server does not serve `resource`, from its discovery document
        (GET /apis/GROUP/VERSION, kube's APIResourceList): "" when it does.  A group/version
        it does not know answers 404 (a CRD not installed); one it knows lists its resources.
        Discovery is open to every authenticated user (kube's system:discovery role): a 403
        here says nothing about the resource itself, so it counts as served and the list
        decides."""
        root = f"/apis/{resource.api_version}" if resource.group else f"/api/{resource.version}"
        try:
            body = self._client.request("get", "discovery", "GET", root, retry=retry).body
        except NotFound:
            return f"the API server serves no {resource.api_version}"
        except Forbidden:
            return ""
        served = {str(r.get("name")) for r in body.get("resources") or [] if isinstance(r, dict)}
        if resource.plural not in served:
            return f"{resource.api_version} has no resource {resource.plural}"
        return ""

    def list_raw(self, resource: Resource, *, retry: bool = True) -> ObjectList:
        """All pages of a list; an expired continue token restarts it as one unpaged list."""
        items: list[JsonObj] = []
        limit = max(self.page_size, 0)
        token = ""
        while True:
            query: list[tuple[str, Any]] = resource.selectors()
            if limit:
                query.append(("limit", limit))
            if token:
                query.append(("continue", token))
            try:
                body = self._client.request(
                    "list", resource.plural, "GET", resource.path, query=query, retry=retry
                ).body
            except Gone:
                if not token:
                    raise
                log.info(
                    "List continue token expired, listing again without pages resource=%s", resource.plural
                )
                items, token, limit = [], "", 0
                continue
            items.extend(body.get("items") or [])
            meta = body.get("metadata") or {}
            token = str(meta.get("continue") or "")
            if not token:
                return ObjectList(items, str(meta.get("resourceVersion") or ""))

    def watch(self, resource: Resource, resource_version: str, timeout_seconds: int) -> WatchStream:
        """One watch request with bookmarks; one attempt (the reflector owns the retry loop)."""
        query: list[tuple[str, Any]] = resource.selectors()
        if resource_version:
            query.append(("resourceVersion", resource_version))
        query += [("watch", True), ("allowWatchBookmarks", True), ("timeoutSeconds", int(timeout_seconds))]
        resp = self._client.stream(
            "watch",
            resource.plural,
            resource.path,
            query=query,
            timeout=(self._client.timeout, int(timeout_seconds) + _WATCH_READ_SLACK),
        )
        return RawWatch(resp)

    def reflector(
        self,
        resource: Resource,
        on_event: EventHandler,
        *,
        on_sync: SyncHandler | None = None,
        watch_timeout: int = 300,
        optional_retry: float = 300.0,
        backoff: ExponentialBackoff | None = None,
        clock: Clock | None = None,
    ) -> Reflector:
        """A Reflector (not started) over `resource` (narrow it with Resource.where).

        Its lists go unretried: the reflector loop is the retry. An optional
        resource may be missing (see Resource); one marked `discover` is looked up
        in the API's discovery before each list.
        """
        return Reflector(
            resource.plural,
            lambda: self.list_raw(resource, retry=False),
            lambda rv, timeout: self.watch(resource, rv, timeout),
            on_event,
            on_sync=on_sync,
            optional=resource.optional,
            unserved=(lambda: self.unserved(resource, retry=False)) if resource.discover else None,
            rbac=resource.rbac,
            watch_timeout=watch_timeout,
            optional_retry=optional_retry,
            backoff=backoff,
            clock=clock,
        )


def _pod_path(namespace: str, name: str, subresource: str = "") -> str:
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
    return f"{path}/{subresource}" if subresource else path


def _find_condition(raw: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for cond in (raw.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return None


def _same_condition(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in ("status", "reason", "message"))


__all__ = [
    "KubeAPI",
    "RawWatch",
]
