"""Where the cluster is and who we are to it: the kubeconfig, in-cluster service account or --master.

kube-scheduler finds its cluster in that order of preference; so does
`load_configuration`. The loading itself is the official client's (its
`kubernetes.config` loaders fill a `kubernetes.client.Configuration`: server,
TLS, tokens and their refresh hooks); this module only decides which source
applies and turns every loading failure into one KubeConfigError whose
message names the file or field, never a credential.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as _k8s_config
from kubernetes.config.config_exception import ConfigException

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
        path = os.path.expanduser(os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0])
        if not os.path.exists(path):
            raise KubeConfigError(
                f"not running in a cluster ({in_cluster_error}) and no kubeconfig: pass --kubeconfig or --master"
            ) from in_cluster_error
        log.info("Not in a cluster, using the default kubeconfig path=%s", path)
        k8s_config.load_kube_config(config_file=path, client_configuration=cfg, persist_config=False)


__all__ = ["KubeConfigError", "in_cluster_configuration", "load_configuration"]
