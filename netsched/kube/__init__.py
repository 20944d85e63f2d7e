"""Everything netsched says to the Kubernetes API server, and the only code importing `kubernetes`.

    client = build_api_client(kubeconfig="~/.kube/config", qps=50, burst=100)
    api = KubeAPI(client)                         # ClusterAPI: bind, delete_pod, evict, status patches
    pods = api.reflector(PODS, on_event).start()  # raw-JSON list + watch in a daemon thread
    events = new_event_broadcaster(client)        # its own client, rate budget and writers, shared by all profiles
    recorder = events.new_recorder("netsched")    # a KubeEventRecorder: the framework's EventRecorder

The kinds it lists and watches are a table (NODES, PODS, ... in
netsched.kube.resources): adding one is one `Resource` entry.

Errors are netsched.kube.errors classes (NotFound, Conflict, ...), never the
client's. The error classes load eagerly (they are cheap); the rest loads on
first use, because importing the official client takes a quarter of a second
and code that only catches Conflict should not pay for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from netsched.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    Transient,
    Unauthorized,
    from_exception,
    is_transient,
)

if TYPE_CHECKING:
    from netsched.kube.api import KubeAPI
    from netsched.kube.client import KubeClient, RetrySettings
    from netsched.kube.events import EventBroadcaster, KubeEventRecorder, new_event_broadcaster
    from netsched.kube.kubeconfig import KubeConfigError, build_api_client
    from netsched.kube.ratelimit import TokenBucket
    from netsched.kube.reflector import (
        ADDED,
        BOOKMARK,
        DELETED,
        MODIFIED,
        ExponentialBackoff,
        ObjectList,
        Reflector,
    )
    from netsched.kube.resources import (
        ACTIVE_PODS_SELECTOR,
        NAMESPACES,
        NODES,
        PODDISRUPTIONBUDGETS,
        PODS,
        RESOURCES,
        Resource,
    )

_LAZY = {
    "KubeAPI": "api",
    "KubeClient": "client",
    "KubeConfigError": "kubeconfig",
    "RetrySettings": "client",
    "build_api_client": "kubeconfig",
    "EventBroadcaster": "events",
    "KubeEventRecorder": "events",
    "new_event_broadcaster": "events",
    "TokenBucket": "ratelimit",
    "ADDED": "reflector",
    "BOOKMARK": "reflector",
    "DELETED": "reflector",
    "MODIFIED": "reflector",
    "ExponentialBackoff": "reflector",
    "ObjectList": "reflector",
    "Reflector": "reflector",
    "ACTIVE_PODS_SELECTOR": "resources",
    "NAMESPACES": "resources",
    "NODES": "resources",
    "PODDISRUPTIONBUDGETS": "resources",
    "PODS": "resources",
    "RESOURCES": "resources",
    "Resource": "resources",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ACTIVE_PODS_SELECTOR",
    "ADDED",
    "BOOKMARK",
    "DELETED",
    "MODIFIED",
    "NAMESPACES",
    "NODES",
    "PODDISRUPTIONBUDGETS",
    "PODS",
    "RESOURCES",
    "AlreadyExists",
    "ApiError",
    "ExponentialBackoff",
    "Conflict",
    "EventBroadcaster",
    "KubeEventRecorder",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeAPI",
    "KubeClient",
    "KubeConfigError",
    "NotFound",
    "ObjectList",
    "Reflector",
    "Resource",
    "RetrySettings",
    "ServerError",
    "TokenBucket",
    "TooManyRequests",
    "Transient",
    "Unauthorized",
    "build_api_client",
    "from_exception",
    "is_transient",
    "new_event_broadcaster",
]
