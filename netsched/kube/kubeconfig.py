"""From the kubeconfig to the process's KubeClients: where the cluster is, who we are to it.

kube-scheduler finds its cluster in this order: --kubeconfig, the in-cluster
service account, $KUBECONFIG / ~/.kube/config; --master overrides the server
address. So does `load_configuration`. The loading itself is the official
client's (its `kubernetes.config` loaders fill a
`kubernetes.client.Configuration`: server, TLS, tokens and their refresh
hooks); this module decides which source applies, turns every loading
failure into one KubeConfigError whose message names the file or field
(never a credential), and builds the KubeClients over a configuration:
`build_api_client` (the process's), `client_for` (a configuration already
loaded: the review clients) and `derived_client` (a second client for the
same cluster with a pool and rate budget of its own: events, leases).
"""

from __future__ import annotations

import copy
import logging
import os
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as _k8s_config
from kubernetes.config.config_exception import ConfigException

from netsched.kube.client import USER_AGENT, KubeClient, RetrySettings
from netsched.kube.ratelimit import TokenBucket
from netsched.kube.transport import Transport

log = logging.getLogger(__name__)

k8s_config: Any = _k8s_config  # the config loaders are untyped


class KubeConfigError(Exception):
    """No usable cluster configuration (bad kubeconfig, not in a cluster, no --master)."""


def load_configuration(kubeconfig: str = "", master: str = "") -> Any:
    """Cluster address and credentials the way kube-scheduler finds them.

    An explicit kubeconfig wins; with neither flag, the in-cluster service
    account is used, then $KUBECONFIG / ~/.kube/config if present. `master`
    overrides the server address of whatever was loaded.
    """
    cfg = k8s.Configuration()
    try:
        if kubeconfig:
            k8s_config.load_kube_config(
                config_file=kubeconfig, client_configuration=cfg, persist_config=False
            )
        elif not master:
            _load_default(cfg)
    except (ConfigException, OSError, ValueError) as e:
        # ConfigException messages name files and fields, never credential values.
        raise KubeConfigError(f"cannot load cluster configuration: {e}") from e
    if master:
        cfg.host = master.rstrip("/")
    return cfg


def in_cluster_configuration() -> Any | None:
    """The in-cluster service account's configuration; None when not running in a cluster."""
    cfg = k8s.Configuration()
    try:
        k8s_config.load_incluster_config(client_configuration=cfg)
    except ConfigException:
        return None
    return cfg


def _load_default(cfg: Any) -> None:
    try:
        k8s_config.load_incluster_config(client_configuration=cfg)
        return
    except ConfigException as in_cluster_error:
        path = os.path.expanduser((os.environ.get("KUBECONFIG") or "~/.kube/config").split(os.pathsep)[0])
        if not os.path.exists(path):
            raise KubeConfigError(
                f"not running in a cluster ({in_cluster_error}) and no kubeconfig at {path}: set "
                "clientConnection.kubeconfig in the --config file (--kubeconfig only without --config), "
                "or pass --master"
            ) from in_cluster_error
        log.info("Not in a cluster, using the default kubeconfig path=%s", path)
        k8s_config.load_kube_config(config_file=path, client_configuration=cfg, persist_config=False)


def build_api_client(
    kubeconfig: str = "",
    master: str = "",
    qps: float = 50,
    burst: int = 100,
    pool_size: int = 16,
    timeout: float = 30,
    *,
    retry: RetrySettings | None = None,
) -> KubeClient:
    """Build the process's KubeClient (once: it is thread-safe and costly to create).

    `pool_size` should cover the threads that call concurrently (binder pool,
    event writer, reflectors); `timeout` bounds connect and each read of a
    request, not watches.
    """
    return client_for(
        load_configuration(kubeconfig, master),
        qps=qps,
        burst=burst,
        pool_size=pool_size,
        timeout=timeout,
        retry=retry,
    )


def client_for(
    cfg: Any,
    *,
    qps: float,
    burst: int,
    pool_size: int,
    timeout: float,
    retry: RetrySettings | None = None,
    lean: bool = True,
) -> KubeClient:
    """A KubeClient for a loaded configuration (netsched.kube.kubeconfig), with its own pool
    sized for `pool_size` threads and its own rate budget; `lean`: on netsched's own transport
    where it serves this cluster (else the kubernetes package's urllib3 pool only)."""
    cfg.connection_pool_maxsize = max(1, pool_size)
    cfg.retries = False  # urllib3 must not retry behind our back: tenacity is the one retry layer
    api_client = k8s.ApiClient(cfg)
    api_client.user_agent = USER_AGENT
    log.info(
        "Built API client host=%s qps=%s burst=%d poolSize=%d timeout=%ss",
        cfg.host,
        qps,
        burst,
        pool_size,
        timeout,
    )
    return KubeClient(
        api_client,
        limiter=TokenBucket(qps, burst),
        retry=retry,
        timeout=timeout,
        transport=Transport.for_configuration(cfg, pool_size) if lean else None,
    )


def derived_client(
    base: KubeClient,
    *,
    pool_size: int,
    qps: float | None = None,
    burst: int | None = None,
    retry: RetrySettings | None = None,
) -> KubeClient:
    """A second KubeClient for the same cluster and credentials with its own pool and rate budget.

    The budget defaults to the same qps/burst as `base` (kube-scheduler builds
    its event clientset from the same clientConnection), in a bucket of its own.

    kube-scheduler writes events through a clientset of their own for the same
    reason: a burst of bindings must not starve events of rate-limit tokens or
    pooled connections, and events must not delay bindings. The configuration
    is copied (shallowly: credentials and refresh hooks are shared) so the new
    pool can be sized for the caller's threads.
    """
    return client_for(
        copy.copy(base.api_client.configuration),
        qps=base.limiter.qps if qps is None else qps,
        burst=base.limiter.burst if burst is None else burst,
        pool_size=pool_size,
        timeout=base.timeout,
        retry=retry or base.retry_settings,
        lean=base.transport is not None,
    )


__all__ = [
    "KubeConfigError",
    "build_api_client",
    "client_for",
    "derived_client",
    "in_cluster_configuration",
    "load_configuration",
]
