"""A pod's workload, named the way a service mesh names it in its traffic metrics.

Traffic metrics (Istio's `source_workload`, Hubble's workload context) are
labelled by workload, not by pod, so anything that joins them with pods must
compute the same name from the pod alone: its controlling owner's name, with
the ReplicaSet and CronJob layers peeled off as Istio does:

    owner ReplicaSet "api-7d9f8c6b5d" + label pod-template-hash=7d9f8c6b5d -> "api" (the Deployment)
    owner Job "report-28473920" (a CronJob's run: <name>-<8+ digits>)       -> "report" (the CronJob)
    owner StatefulSet / DaemonSet / Job / other controller "db"             -> "db"
    no controller                                                           -> the pod's own name

The ReplicaSet's Deployment is found from the pod alone (the template hash
suffix), so it holds before the ReplicaSet reaches the cache.  A configured
label (e.g. `service.istio.io/canonical-name` or `app.kubernetes.io/name`)
overrides all of it when the pod carries it.  The key joins namespace and
name: "shop/api".
"""

from __future__ import annotations

import re

from netsched.framework.types import PodInfo

POD_TEMPLATE_HASH = "pod-template-hash"
# A CronJob names each Job <cronjob>-<scheduled time in minutes since the epoch>.
_CRONJOB_RUN = re.compile(r"^(.+)-\d{8,}$")


def workload_name(pod: PodInfo, label: str = "") -> str:
    """The pod's workload name (without namespace); see the module docstring."""
    if label:
        value = pod.labels.get(label)
        if value:
            return value
    kind, name = pod.owner_kind, pod.owner_name
    if not name:
        return pod.name
    if kind == "ReplicaSet":
        suffix = pod.labels.get(POD_TEMPLATE_HASH, "")
        if suffix and name.endswith("-" + suffix):
            return name[: -len(suffix) - 1]
        return name  # a bare ReplicaSet: the mesh names it as it is
    if kind == "Job":
        m = _CRONJOB_RUN.match(name)
        return m.group(1) if m else name
    return name


def workload_key(pod: PodInfo, label: str = "") -> str:
    """ "namespace/workload": the key traffic edges are kept under."""
    return f"{pod.namespace}/{workload_name(pod, label)}"
