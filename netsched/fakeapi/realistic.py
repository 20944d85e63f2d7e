"""Pods and nodes padded the way a real API server returns them, for benchmarks that track reality.

A scheduler's API cost is mostly decoding: a real kube-apiserver sends every
pod and node with managedFields, full status, conditions, images and the
fields admission fills in, so a node is ~5-8 KB of JSON and a pod ~3-5 KB.
The bare objects the builders make are a few hundred bytes, and a benchmark
over them under-reports the client's work several times over.

`enrich(resource, obj)` fills in what a real cluster would have added, never
overwriting a field the object already has, and adding nothing a scheduler
decides on (no taints, requests, affinity or node selectors; the tolerations
added are the DefaultTolerationSeconds admission ones, which match only
not-ready/unreachable NoExecute taints).  FakeAPIServer(realistic=True) runs it
on every pod and node it stores, so every list, get and watch event carries
the padding.
"""

from __future__ import annotations

import hashlib
from typing import Any

JsonObj = dict[str, Any]

_TIME = "2024-05-01T10:00:00Z"
_IMAGES = [
    ("registry.k8s.io/etcd", "3.5.12-0", 57236178),
    ("registry.k8s.io/kube-apiserver", "v1.31.0", 32772186),
    ("registry.k8s.io/kube-controller-manager", "v1.31.0", 31141412),
    ("registry.k8s.io/kube-proxy", "v1.31.0", 28051034),
    ("registry.k8s.io/kube-scheduler", "v1.31.0", 18456072),
    ("registry.k8s.io/coredns/coredns", "v1.11.1", 18182961),
    ("docker.io/calico/node", "v3.27.3", 115238612),
    ("docker.io/calico/cni", "v3.27.3", 94535610),
    ("quay.io/prometheus/node-exporter", "v1.8.0", 11724021),
    ("docker.io/library/nginx", "1.25.4", 70544635),
    ("registry.k8s.io/pause", "3.9", 321520),
]


def enrich(resource: str, obj: JsonObj) -> JsonObj:
    """`obj` (a "pods" or "nodes" object) with a real cluster's extra fields; other kinds unchanged."""
    if resource == "nodes":
        extra = _node_extras(obj)
        have = (obj.get("status") or {}).get("conditions")
        if have:  # keep the object's own conditions, add the kubelet's others
            types = {c.get("type") for c in have}
            have.extend(c for c in extra["status"]["conditions"] if c["type"] not in types)
        _fill(obj, extra)
    elif resource == "pods":
        _fill(obj, _pod_extras(obj))
    return obj


def _fill(target: JsonObj, extra: JsonObj) -> None:
    """Add what `target` lacks, recursing into mappings; lists and scalars present are kept."""
    for key, value in extra.items():
        have = target.get(key)
        if have is None:
            target[key] = value
        elif isinstance(have, dict) and isinstance(value, dict):
            _fill(have, value)


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _fields_entry(manager: str, operation: str, fields: JsonObj, subresource: str = "") -> JsonObj:
    entry: JsonObj = {
        "manager": manager,
        "operation": operation,
        "apiVersion": "v1",
        "time": _TIME,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def _condition_fields(types: list[str]) -> JsonObj:
    per: JsonObj = {
        "f:lastHeartbeatTime": {},
        "f:lastTransitionTime": {},
        "f:message": {},
        "f:reason": {},
        "f:status": {},
        "f:type": {},
    }
    return {f'k:{{"type":"{t}"}}': dict(per) for t in types}


_NODE_CONDITIONS = [
    ("NetworkUnavailable", "False", "CalicoIsUp", "Calico is running on this node"),
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status. AppArmor enabled"),
]


def _node_extras(obj: JsonObj) -> JsonObj:
    name = str((obj.get("metadata") or {}).get("name") or "node")
    status = obj.get("status") or {}
    capacity = status.get("capacity") or {"cpu": "8", "memory": "32Gi", "pods": "110"}
    resources = {**capacity, "ephemeral-storage": "203056560Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "n2-standard-8",
    }
    kubelet_fields: JsonObj = {
        "f:metadata": {
            "f:annotations": {".": {}, "f:volumes.kubernetes.io/controller-managed-attach-detach": {}},
            "f:labels": {".": {}, **{f"f:{k}": {} for k in labels}},
        }
    }
    status_fields = {
        "f:status": {
            "f:allocatable": {f"f:{k}": {} for k in resources},
            "f:capacity": {f"f:{k}": {} for k in resources},
            "f:conditions": _condition_fields([c[0] for c in _NODE_CONDITIONS]),
            "f:images": {},
            "f:nodeInfo": {"f:bootID": {}, "f:kernelVersion": {}, "f:osImage": {}, "f:systemUUID": {}},
        }
    }
    return {
        "metadata": {
            "uid": _digest(name)[7:43],
            "creationTimestamp": _TIME,
            "labels": labels,
            "annotations": {
                "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///var/run/containerd/containerd.sock",
                "node.alpha.kubernetes.io/ttl": "0",
                "projectcalico.org/IPv4Address": "10.0.0.1/24",
                "projectcalico.org/IPv4IPIPTunnelAddr": "192.168.1.0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "managedFields": [
                _fields_entry("kubelet", "Update", kubelet_fields),
                _fields_entry("kube-controller-manager", "Update", {"f:spec": {"f:podCIDR": {}}}),
                _fields_entry("calico-node", "Update", {"f:status": {"f:conditions": {}}}, "status"),
                _fields_entry("kubelet", "Update", status_fields, "status"),
            ],
        },
        "spec": {"podCIDR": "192.168.1.0/24", "podCIDRs": ["192.168.1.0/24"]},
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "conditions": [
                {
                    "type": t,
                    "status": s,
                    "lastHeartbeatTime": _TIME,
                    "lastTransitionTime": _TIME,
                    "reason": reason,
                    "message": message,
                }
                for t, s, reason, message in _NODE_CONDITIONS
            ],
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": _digest(name + "m")[7:39],
                "systemUUID": _digest(name + "s")[7:43],
                "bootID": _digest(name + "b")[7:43],
                "kernelVersion": "6.1.0-21-cloud-amd64",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://1.7.16",
                "kubeletVersion": "v1.31.0",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": [
                {"names": [f"{repo}@{_digest(repo + tag)}", f"{repo}:{tag}"], "sizeBytes": size}
                for repo, tag, size in _IMAGES
            ],
        },
    }


def _probe(path: str, period: int) -> JsonObj:
    return {
        "httpGet": {"path": path, "port": "http", "scheme": "HTTP"},
        "initialDelaySeconds": 5,
        "timeoutSeconds": 1,
        "periodSeconds": period,
        "successThreshold": 1,
        "failureThreshold": 3,
    }


def _pod_extras(obj: JsonObj) -> JsonObj:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "pod")
    containers = (obj.get("spec") or {}).get("containers") or []
    container_fields = {
        f'k:{{"name":"{c.get("name", "c")}"}}': {
            ".": {},
            "f:env": {".": {}, 'k:{"name":"POD_NAME"}': {".": {}, "f:name": {}, "f:valueFrom": {}}},
            "f:image": {},
            "f:imagePullPolicy": {},
            "f:name": {},
            "f:livenessProbe": {"f:httpGet": {"f:path": {}, "f:port": {}}, "f:periodSeconds": {}},
            "f:ports": {'k:{"containerPort":8080,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
            "f:readinessProbe": {"f:httpGet": {"f:path": {}, "f:port": {}}, "f:periodSeconds": {}},
            "f:resources": {"f:limits": {}, "f:requests": {}},
            "f:terminationMessagePath": {},
            "f:terminationMessagePolicy": {},
        }
        for c in containers
    }
    for c in containers:
        _fill(
            c,
            {
                "env": [
                    {
                        "name": "POD_NAME",
                        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                    },
                    {
                        "name": "POD_IP",
                        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
                    },
                    {"name": "LOG_LEVEL", "value": "info"},
                ],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "livenessProbe": _probe("/healthz", 10),
                "readinessProbe": _probe("/readyz", 5),
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [
                    {
                        "name": "kube-api-access-x7k2p",
                        "readOnly": True,
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    }
                ],
            },
        )
    owner = f"{name.rsplit('-', 1)[0]}-7d9c8b6f5"
    return {
        "metadata": {
            "generateName": f"{owner}-",
            "labels": {
                "pod-template-hash": "7d9c8b6f5",
                "app.kubernetes.io/managed-by": "Helm",
                "app.kubernetes.io/part-of": "netsched-bench",
                "app.kubernetes.io/version": "1.4.2",
            },
            "creationTimestamp": _TIME,
            "annotations": {"kubectl.kubernetes.io/restartedAt": _TIME},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": owner,
                    "uid": _digest(owner)[7:43],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                _fields_entry(
                    "kube-controller-manager",
                    "Update",
                    {
                        "f:metadata": {
                            "f:generateName": {},
                            "f:labels": {".": {}},
                            "f:ownerReferences": {".": {}, f'k:{{"uid":"{_digest(owner)[7:43]}"}}': {}},
                        },
                        "f:spec": {
                            "f:containers": container_fields,
                            "f:dnsPolicy": {},
                            "f:enableServiceLinks": {},
                            "f:restartPolicy": {},
                            "f:schedulerName": {},
                            "f:securityContext": {},
                            "f:terminationGracePeriodSeconds": {},
                        },
                    },
                ),
            ],
        },
        "spec": {
            "volumes": [
                {
                    "name": "kube-api-access-x7k2p",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                        "defaultMode": 420,
                    },
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }
