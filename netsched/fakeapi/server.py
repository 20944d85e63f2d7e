"""A stateful fake Kubernetes API server over real sockets, for integration tests, benchmarks and the demo.

No real API server can be installed here, and a mocked client would never prove
that netsched's raw-JSON calls, watches and retries work on the wire. This fake
speaks the same HTTP as kube-apiserver for the resources a scheduler touches:
one global resourceVersion, list + watch (bookmarks, 410 after compaction,
selector transitions), pods/binding, pods/status, events in both API groups,
leases with 409 on stale writes, poddisruptionbudgets and replicasets (their
metadata.generation counts spec changes); and the two review APIs a delegating
server calls (TokenReview, SubjectAccessReview) answered from hooks:
add_token(token, user, groups) and allow(user, path, verb), and from what was
stored: the RBAC roles and bindings (netsched.fakeapi.rbac, as kube's
authorizer) and the tokens serviceaccounts/token minted (what `kubectl create
token` asks for). It also stores the other kinds deploy/ applies (service
accounts, secrets, config maps, services, deployments, the Prometheus
Operator's monitors), so tests apply the manifests as written
(netsched.testing.kubectl).

Evictions: POST pods/NAME/eviction (policy/v1 Eviction, `create` on
pods/eviction) as kube's eviction handler answers it (disruption.py): the one
PodDisruptionBudget that guards the pod is charged (status.disruptionsAllowed
decremented, the pod recorded in status.disruptedPods with the time) and the
pod deleted (at once, as every delete here, after the DisruptionTarget
condition is set); 429 TooManyRequests with a DisruptionBudget cause when the
budget allows none ("The disruption budget web needs 3 healthy pods and has 3
currently"), 500 when two budgets guard the pod, 404 for a missing pod, 409 when
deleteOptions.preconditions (uid, resourceVersion) do not match; pending,
terminal and terminating pods go without a budget, unready ones under kube's
unhealthyPodEvictionPolicy rules; dryRun=All checks and changes nothing.
Budgets keep the status a test writes, unless FakeAPIServer(disruption_controller=True)
keeps it as kube's disruption controller does, synchronously on every write
(currentHealthy, desiredHealthy, expectedPods from ReplicaSets' and Deployments' replicas,
disruptionsAllowed, disruptedPods, observedGeneration, the DisruptionAllowed
condition). Nothing makes pods Ready or recreates them: netsched.testing.workloads
has a kubelet and a ReplicaSet controller for that.

RBAC: off by default (every request allowed); authorize_requests() authorizes
every resource request from the stored roles and bindings, as kube's RBAC
authorizer (netsched.fakeapi.rbac), for the user of its bearer token, and
answers 403 Forbidden with kube's message when nothing grants it.

Tests drive it over HTTP through the official client or netsched.kube, and reach
into it through plain thread-safe hooks: create/get/list/update/patch/delete/bind
objects, compact() the history, inject_fault() to fail requests, outage() and
recover() to take the whole server down and back on the same port, and inspect
`requests` (RBAC-style tuples) to check a ClusterRole covers what was used.

CustomResourceDefinitions: the kinds resources.py marks `crd` (scheduler-plugins')
are served only while their CRD exists (create_crd(), or applying its manifest), in
discovery (GET /api/v1, /apis/GROUP/VERSION: kube's APIResourceList) as on
their paths, as kube's apiextensions server serves them; every other kind is
built in.  Discovery is open to every caller, as kube's system:discovery role.

Resource names for the hooks: a bare plural for the core group ("pods", "nodes",
"namespaces", "events"), "group/plural" otherwise ("events.k8s.io/events",
"coordination.k8s.io/leases", "policy/poddisruptionbudgets"); a bare plural that
only one group serves ("leases", "poddisruptionbudgets") is accepted too. Core
events and events.k8s.io events are stored separately.

    with FakeAPIServer() as server:
        server.write_kubeconfig(tmp_path / "kubeconfig")
        server.create("nodes", {"metadata": {"name": "n1"}})
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import copy
import json
import re
import secrets
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from netsched.clock import Clock, SystemClock
from netsched.fakeapi import rbac
from netsched.fakeapi.disruption import DisruptionController
from netsched.fakeapi.disruption import evict as evict_pod
from netsched.fakeapi.http_server import Fault, HTTPServer, RecordedRequest
from netsched.fakeapi.patch import strategic_merge_patch
from netsched.fakeapi.realistic import enrich
from netsched.fakeapi.resources import CRDS, ResourceType, crd_manifest, resolve_resource, served_by
from netsched.fakeapi.selection import selector_matcher
from netsched.fakeapi.store import JsonObj, StatusError, Store, deep_copy
from netsched.observability.tls import ServingCert, serving_cert

T = TypeVar("T")


class FakeAPIServer:
    """The fake API server; every public method is safe to call from any thread."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        watch_timeout: float = 30.0,
        bookmark_interval: float = 1.0,
        history_size: int = 100_000,
        log_requests: bool = False,
        tls: bool = False,
        realistic: bool = False,
        disruption_controller: bool = False,
        clock: Clock | None = None,
    ) -> None:
        """`watch_timeout` applies to watches sent without timeoutSeconds; `history_size`
        bounds the replayable watch history (at least that many events are kept).

        `tls`: serve HTTPS with a self-signed certificate made at start (the kubeconfig
        written carries it as the CA, so clients verify it). `realistic`: pods and nodes
        are stored padded as a real cluster's (managedFields, status, conditions; see
        realistic.py), so every list, get and watch event carries a real object's size.
        `disruption_controller`: keep PodDisruptionBudgets' status as kube's controller does
        (see the module docstring). `clock`: the wall time of evictions and budget status
        (a ManualClock lets a test pass kube's 2-minute DeletionTimeout).
        """
        self.store = Store(history_size)
        self.clock: Clock = clock or SystemClock()
        self.disruption = DisruptionController(self.store, self.clock.wall) if disruption_controller else None
        self.tls = tls
        self.realistic = realistic
        self._cert: ServingCert | None = None
        if realistic:
            self._pad_created_objects()
        self.watch_timeout = watch_timeout
        self.bookmark_interval = bookmark_interval
        self.log_requests = log_requests
        self._address = (host, port)
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._faults: list[Fault] = []
        self._connections: set[socket.socket] = set()
        self._open_streams = 0  # watch streams not yet ended by their final chunk
        self._streams_cond = threading.Condition(self._lock)
        self._tokens: dict[str, JsonObj] = {}
        self._authenticate = False  # require_authentication()
        self._grants: set[tuple[str, str, str]] = set()  # (user or "group:NAME", path, verb)
        self._authorize = False  # authorize_requests(): RBAC from the stored roles and bindings
        self._hanging = False  # a "hang" outage: requests are held, unanswered
        self._refusing = False  # a "refuse" outage: a request that slips in is closed unanswered
        self._release = threading.Event()  # set to close the connections of held requests
        self.held_requests = 0  # requests caught by "hang" outages

    # --- lifecycle -----------------------------------------------------------

    def start(self) -> FakeAPIServer:
        """Bind and serve in a daemon thread; returns self so `FakeAPIServer().start()` chains."""
        if self._httpd is not None:
            raise RuntimeError("FakeAPIServer already started")
        if self.tls:
            self._cert = serving_cert(alternate_names=[self._address[0]])
        self._serve()
        return self

    def _serve(self) -> None:
        self._httpd = HTTPServer(self._address, self, self._cert.context() if self._cert else None)
        # Bound once: an outage ends by serving again on the same port (recover()).
        self._address = (self._address[0], int(self._httpd.server_address[1]))
        # A short poll interval keeps stop() fast; idle cost is negligible.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fakeapi", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, end open watches and drop kept-alive connections."""
        self._release_held()
        if self._httpd is None:
            self._forget_cert()
            return
        self.store.close_watchers()
        # Each open watch ends with its final chunk, as a clean end.  The bound is for a client
        # that stopped reading (its handler blocked on a full socket): closing the connection
        # below is then what ends it.
        with self._streams_cond:
            self._streams_cond.wait_for(lambda: self._open_streams == 0, timeout=2.0)
        self._close(reset=False)
        self._forget_cert()

    def _close(self, *, reset: bool) -> None:
        """Stop accepting and end every open connection (`reset`: with a TCP RST, as the kernel
        ends a killed process's connections that still hold unread data)."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            # Without this, a pooled client connection would keep being served after stop().
            with contextlib.suppress(OSError):
                if reset:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _forget_cert(self) -> None:
        if self._cert is not None:
            self._cert.close()
            self._cert = None

    # --- outages -------------------------------------------------------------

    def outage(self, mode: str = "refuse") -> None:
        """Make the server unreachable until recover(), keeping its objects, port and certificate.

        "refuse": as a killed process on the same host: open connections are reset and
        connects refused. "hang": as a wedged server, or one behind a network partition:
        connections stay open and new ones are accepted, but no request is answered; a
        request caught in it is never answered (a half-open connection: only the client's
        read timeout ends it), unless a "refuse" outage or stop() comes first and closes it.
        Watch streams already open are not held.
        """
        if mode == "hang":
            with self._lock:
                self._hanging = True
        elif mode == "refuse":
            with self._lock:
                # Before anything is closed: a request read on a kept-alive connection between
                # here and the reset must not be served (a killed server stores nothing).
                self._refusing = True
                self._hanging = False
            self._release_held()
            self._close(reset=True)
        else:
            raise ValueError(f"outage mode must be 'refuse' or 'hang', not {mode!r}")

    def recover(self) -> None:
        """End an outage: answer requests again, on the same port after a "refuse" outage."""
        with self._lock:
            self._hanging = False
            self._refusing = False
        if self._httpd is None:
            self._serve()

    def held(self) -> bool:
        """Called by the handler for every request: during a "hang" outage, wait without answering
        until the connection is to be closed (True); during a "refuse" outage, True at once (close
        the connection unanswered); False at once otherwise."""
        with self._lock:
            if self._refusing:
                return True
            if not self._hanging:
                return False
            release = self._release
            self.held_requests += 1
        release.wait()
        return True

    def _release_held(self) -> None:
        with self._lock:
            release, self._release = self._release, threading.Event()
        release.set()

    def __enter__(self) -> FakeAPIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._thread is None:
            raise RuntimeError("FakeAPIServer not started")
        return self._address[1]

    @property
    def url(self) -> str:
        host = self._address[0]
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def ca_pem(self) -> bytes:
        """The PEM certificate clients must trust (HTTPS only; it signs itself)."""
        if self._cert is None:
            raise RuntimeError("FakeAPIServer is not serving HTTPS")
        return Path(self._cert.cert_file).read_bytes()

    def write_kubeconfig(self, path: str | Path, *, token: str = "") -> Path:
        """Write a kubeconfig that kubernetes.config.load_kube_config accepts, with no auth or
        with bearer `token`; over HTTPS it carries the server's certificate as
        certificate-authority-data.

        JSON is valid YAML, so no YAML library is needed to write it.
        """
        cluster: dict[str, str] = {"server": self.url}
        if self.tls:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca_pem).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": cluster}],
            "users": [{"name": "fake", "user": {"token": token} if token else {}}],
            "contexts": [
                {"name": "fake", "context": {"cluster": "fake", "user": "fake", "namespace": "default"}}
            ],
            "current-context": "fake",
        }
        target = Path(path)
        target.write_text(json.dumps(config, indent=2))
        return target

    def _pad_created_objects(self) -> None:
        """Realistic mode: every pod and node created (by a hook or over HTTP) is padded once."""
        create = self.store.create

        def padded(rt: ResourceType, namespace: str | None, body: JsonObj) -> JsonObj:
            if rt.group == "" and rt.plural in ("pods", "nodes"):
                body = enrich(rt.plural, body)
            return create(rt, namespace, body)

        self.store.create = padded  # type: ignore[method-assign]

    # --- object hooks (bypass HTTP; no request is recorded) ------------------

    def create(self, resource: str, obj: JsonObj, namespace: str | None = None) -> JsonObj:
        """Create an object as a POST would; namespaced objects default to "default".  A CRD's
        kind must be served first (create_crd), as a POST would get 404 before."""
        rt = resolve_resource(resource)
        if not self.serves(rt):
            raise StatusError(
                404,
                "NotFound",
                f"{rt.qualified} is not served: create its CustomResourceDefinition {rt.crd_name} "
                f"first (create_crd({rt.key!r}), or apply its manifest)",
            )
        return copy.deepcopy(self.store.create(rt, self._ns(rt, obj, namespace), copy.deepcopy(obj)))

    def create_crd(self, resource: str) -> JsonObj:
        """Create the CustomResourceDefinition of one of the fake's CRD kinds
        ("appgroup.diktyo.x-k8s.io/appgroups"), as applying its manifest would: from then on the kind is served, over HTTP
        and in discovery.  Deleting the CRD object ends that (its objects are kept, unserved)."""
        rt = resolve_resource(resource)
        if not rt.crd:
            raise ValueError(f"{rt.key} is built in: it is always served")
        return self.create(CRDS.key, crd_manifest(rt))

    def serves(self, rt: ResourceType) -> bool:
        """Whether `rt` is served now: a built-in kind always, a CRD's while its CRD serves it."""
        if not rt.crd:
            return True
        try:
            crd = self.store.get(CRDS, None, rt.crd_name)
        except StatusError:
            return False
        return served_by(rt, crd)

    def get(self, resource: str, name: str, namespace: str | None = None) -> JsonObj:
        """Raises StatusError (code 404) if absent."""
        rt = resolve_resource(resource)
        return copy.deepcopy(self.store.get(rt, self._ns(rt, None, namespace), name))

    def list(
        self, resource: str, namespace: str | None = None, label_selector: str = "", field_selector: str = ""
    ) -> list[JsonObj]:
        """All matching objects; namespace None means every namespace."""
        rt = resolve_resource(resource)
        items, _ = self.store.list(rt, namespace, selector_matcher(label_selector, field_selector))
        return deep_copy(items)

    def update(self, resource: str, obj: JsonObj, namespace: str | None = None) -> JsonObj:
        """Replace the whole object, status included (unlike a PUT); 409 StatusError if its
        metadata.resourceVersion is set and stale."""
        rt = resolve_resource(resource)
        body = copy.deepcopy(obj)
        name = str((body.get("metadata") or {}).get("name", ""))
        return copy.deepcopy(self.store.mutate(rt, self._ns(rt, obj, namespace), name, lambda _cur: body))

    def patch(self, resource: str, name: str, patch: JsonObj, namespace: str | None = None) -> JsonObj:
        """Strategic-merge `patch` into the object (status included), e.g. to relabel a node."""
        rt = resolve_resource(resource)
        body = copy.deepcopy(patch)
        ns = self._ns(rt, None, namespace)
        return copy.deepcopy(self.store.mutate(rt, ns, name, lambda cur: strategic_merge_patch(cur, body)))

    def delete(self, resource: str, name: str, namespace: str | None = None) -> JsonObj:
        """Delete at once (no graceful termination) and return the final state."""
        rt = resolve_resource(resource)
        return copy.deepcopy(self.store.delete(rt, self._ns(rt, None, namespace), name))

    def bind(self, namespace: str, name: str, node: str) -> JsonObj:
        """Bind a pod as POST pods/binding does; 409 StatusError if already bound."""
        return copy.deepcopy(self.store.bind(namespace, name, node))

    def evict(self, namespace: str, name: str, body: JsonObj | None = None, dry_run: str = "") -> None:
        """Evict a pod as POST pods/NAME/eviction with `body` (default: a bare policy/v1 Eviction)
        and the dryRun parameter `dry_run`; StatusError (429, 500, 404, 409, ...) as kube refuses."""
        eviction = body if body is not None else {"metadata": {"name": name, "namespace": namespace}}
        evict_pod(
            self.store,
            namespace,
            name,
            eviction,
            dry_run=dry_run,
            now=self.clock.wall(),
            controller=self.disruption,
        )

    def compact(self) -> None:
        """Drop the watch history: watches from any older resourceVersion now get 410 Expired."""
        self.store.compact()

    @property
    def resource_version(self) -> int:
        """The global counter: the resourceVersion of the latest write."""
        return self.store.resource_version

    @staticmethod
    def _ns(rt: ResourceType, obj: JsonObj | None, namespace: str | None) -> str | None:
        if not rt.namespaced:
            return None
        from_obj = ((obj or {}).get("metadata") or {}).get("namespace")
        return namespace or from_obj or "default"

    # --- delegated auth (TokenReview / SubjectAccessReview) -------------------

    def add_token(
        self, token: str, user: str, groups: builtins.list[str] | tuple[str, ...] = (), uid: str = ""
    ) -> None:
        """A TokenReview of `token` now authenticates as `user` in `groups` (others: not authenticated)."""
        info: JsonObj = {"username": user, "groups": list(groups)}
        if uid:
            info["uid"] = uid
        with self._lock:
            self._tokens[token] = info

    def require_authentication(self, on: bool = True) -> None:
        """From now on every API request (not /healthz, /readyz, /livez, /version) must carry
        `Authorization: Bearer T` for a token T given to add_token, else 401 Unauthorized, as a
        real API server answers a missing, expired or rotated-away token."""
        with self._lock:
            self._authenticate = on

    def authenticated(self, authorization: str) -> bool:
        """Called by the handler for every API request."""
        scheme, _, token = authorization.partition(" ")
        with self._lock:
            return not self._authenticate or (scheme.lower() == "bearer" and token.strip() in self._tokens)

    def remove_token(self, token: str) -> None:
        """The token no longer authenticates (rotated away, or expired)."""
        with self._lock:
            self._tokens.pop(token, None)

    def allow(self, user: str, path: str, verb: str = "get", *, group: bool = False) -> None:
        """SubjectAccessReviews for (user or, with group=True, any member of that group, non-resource
        `path`, `verb`) are allowed from now on; a path ending in "*" is a prefix, as in RBAC."""
        with self._lock:
            self._grants.add((f"group:{user}" if group else user, path, verb))

    def authorize_requests(self, on: bool = True) -> None:
        """From now on every resource request is authorized as kube's RBAC authorizer would,
        from the roles and bindings stored here (netsched.fakeapi.rbac; apply deploy/ with
        netsched.testing.kubectl), for the user its bearer token authenticates (add_token, or a
        token serviceaccounts/token minted; system:anonymous without one): 403 Forbidden, with
        kube's message, when nothing grants it.  Off by default (every request allowed).  The
        built-in system: roles are not stored, so a binding to one grants nothing."""
        with self._lock:
            self._authorize = on

    def forbidden(self, request: RecordedRequest, name: str, authorization: str) -> StatusError | None:
        """Called by the handler for every resource request: the 403 RBAC would answer, or None."""
        token = authorization.partition(" ")[2].strip()
        with self._lock:
            if not self._authorize:
                return None
            known = self._tokens.get(token) or {
                "username": "system:anonymous",
                "groups": ["system:unauthenticated"],
            }
        user = str(known.get("username") or "")
        attributes = {
            "verb": request.verb,
            "group": request.api_group,
            "resource": request.resource,
            "subresource": request.subresource,
            "namespace": request.namespace,
            "name": name,
        }
        spec = {"user": user, "groups": list(known.get("groups") or ()), "resourceAttributes": attributes}
        if rbac.review(self.store, spec):
            return None
        resource = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
        scope = f'in the namespace "{request.namespace}"' if request.namespace else "at the cluster scope"
        why = (
            f'User "{user}" cannot {request.verb} resource "{resource}" in API group '
            f'"{request.api_group}" {scope}'
        )
        qualified = f"{request.resource}.{request.api_group}" if request.api_group else request.resource
        what = f'{qualified} "{name}"' if name else qualified
        details = {"name": name, "group": request.api_group, "kind": request.resource}
        return StatusError(403, "Forbidden", f"{what} is forbidden: {why}", details)

    def review_token(self, body: JsonObj) -> JsonObj:
        token = str(((body.get("spec") or {}).get("token")) or "")
        with self._lock:
            user = self._tokens.get(token)
        status: JsonObj = {"authenticated": user is not None}
        if user is not None:
            status["user"] = copy.deepcopy(user)
        else:
            status["error"] = "token not recognized"
        return {**body, "status": status}

    def review_access(self, body: JsonObj) -> JsonObj:
        spec = body.get("spec") or {}
        attrs = spec.get("nonResourceAttributes") or {}
        subjects = {str(spec.get("user") or "")} | {f"group:{g}" for g in spec.get("groups") or ()}
        path, verb = str(attrs.get("path") or ""), str(attrs.get("verb") or "")
        with self._lock:
            allowed = bool(attrs) and any(
                who in subjects
                and v in (verb, "*")
                and (p == path or (p.endswith("*") and path.startswith(p[:-1])))
                for who, p, v in self._grants
            )
        # Else what the stored RBAC objects grant (a test that applied deploy/'s manifests).
        reason = "allowed by a test grant" if allowed else rbac.review(self.store, spec)
        return {**body, "status": {"allowed": bool(reason), "reason": reason}}

    def request_token(self, namespace: str, name: str, body: JsonObj) -> JsonObj:
        """POST serviceaccounts/NAME/token (what `kubectl create token` sends): a new token that
        TokenReviews authenticate as the account, in kube's service-account groups."""
        account = self.store.get(resolve_resource("serviceaccounts"), namespace, name)
        token = f"fake-token-{namespace}-{name}-{secrets.token_hex(8)}"
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"]
        self.add_token(token, f"system:serviceaccount:{namespace}:{name}", groups, account["metadata"]["uid"])
        seconds = int((body.get("spec") or {}).get("expirationSeconds") or 3600)
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))
        spec = {"audiences": [], **(body.get("spec") or {}), "expirationSeconds": seconds}
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": expires},
        }

    # --- faults --------------------------------------------------------------

    def inject_fault(
        self,
        method: str,
        path_regex: str,
        status: int | None = 503,
        count: int = 1,
        delay: float = 0.0,
        reset: bool = False,
        retry_after: int = 1,
        hold: threading.Event | None = None,
    ) -> Fault:
        """Make the next `count` requests matching `method` ("*" for any) and `path_regex`
        (searched in the path with its query string) fail.

        Each one first sleeps `delay` seconds; then, if `reset`, the connection is
        closed without a response; else if `status`, a Status error with that code
        is returned (429 carries Retry-After: `retry_after` seconds, none if 0); with
        status None the request is only delayed. A negative count never runs out. The
        returned Fault's `hits` counts the requests it caught. With `hold`, each one first
        hangs until that event is set (at most a minute): a call that never returns. Scope a fault to one
        kind of request with the verb and path: event writes only are method "POST"
        and a regex matching "/apis/events.k8s.io/v1/namespaces/NS/events".
        """
        fault = Fault(
            method.upper(), re.compile(path_regex), status, count, delay, reset, retry_after, hold=hold
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def take_fault(self, method: str, path: str) -> Fault | None:
        """Called by the handler for every request: the first live matching fault, used up by one."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.hits += 1
                    if fault.remaining > 0:
                        fault.remaining -= 1
                    return fault
        return None

    # --- request log ---------------------------------------------------------

    @property
    def requests(self) -> builtins.list[RecordedRequest]:
        """Every resource request served so far, as (verb, api_group, resource, subresource, namespace)."""
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def open_watches(self) -> int:
        """Watch streams answered (from their response headers on) and not yet ended by their
        final chunk; stop() waits for none to be left before closing connections."""
        with self._lock:
            return self._open_streams

    def streams(self, delta: int) -> None:
        """A watch stream began (+1) or ended after writing its final chunk (-1)."""
        with self._streams_cond:
            self._open_streams += delta
            self._streams_cond.notify_all()

    def track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    # --- helpers -------------------------------------------------------------

    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0, interval: float = 0.01) -> T:
        """Poll `predicate` until it returns something truthy and return that; TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout} s")
            time.sleep(interval)
