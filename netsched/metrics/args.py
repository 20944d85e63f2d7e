"""The `prometheus:` block every metrics-aware plugin's args carry.

All three in-tree metrics plugins (and any user plugin) embed the same
`PrometheusArgs`, so one YAML anchor can serve them all.  Two blocks that agree
on the connection (address, auth, TLS, timeout, poll interval, node mapping)
share one poller and one cache; blocks that are fully equal also share one
MetricSource, hence one estimator, so a pod reserved by three plugins is
counted once.  Defaults live here, next to the types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from netsched.framework.fields import Fields

DEFAULT_ADDRESS = "http://prometheus-k8s.monitoring.svc:9090"
DEFAULT_TIMEOUT_SECONDS = 5.0
DEFAULT_POLL_INTERVAL_SECONDS = 15.0
# A reply above this is refused while it is read. 16 MiB holds a per-node vector for ~50,000
# nodes (~300 bytes a series): room for the largest clusters, and a bound a scheduler pod can afford.
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
MIN_MAX_RESPONSE_BYTES = 1024
# Samples older than this many poll intervals count as stale: three polls may
# fail in a row (a Prometheus restart) before a node's data is distrusted.
MAX_AGE_POLL_INTERVALS = 4
DEFAULT_RATE_WINDOW = "1m"

FAIL_OPEN = "failOpen"
FAIL_CLOSED = "failClosed"
STALE_POLICIES = (FAIL_OPEN, FAIL_CLOSED)

BY_LABEL = "label"
BY_INSTANCE = "instance"
MAPPING_MODES = (BY_LABEL, BY_INSTANCE)

# One direction of a 8.4 Mbit/s link: a typical chatty microservice.  Used for
# pods without kubernetes.io/{ingress,egress}-bandwidth annotations.
DEFAULT_BANDWIDTH_BYTES = 1024 * 1024
DEFAULT_CPU_FACTOR = 0.85  # Koordinator's estimator factors
DEFAULT_MEMORY_FACTOR = 0.70
# A sample covers a reservation once it is this much newer: pod start, and at least the whole
# rate window (an earlier sample's rate() shows only part of the pod's load).
MIN_COVER_MARGIN_SECONDS = 30.0
_DURATION_UNITS = {
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
    "y": 31536000.0,
}
_DURATION_PART = re.compile(r"([0-9]+)(ms|[smhdwy])")


def duration_seconds(text: str) -> float:
    """Seconds of a Prometheus duration ("1m", "1m30s"), already checked against _DURATION."""
    return sum(int(n) * _DURATION_UNITS[unit] for n, unit in _DURATION_PART.findall(text))


LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_DURATION = re.compile(r"^(?:[0-9]+(?:ms|[smhdwy]))+$")
QUERY_FIELDS = (
    "networkReceive",
    "networkTransmit",
    "linkSpeed",
    "cpu",
    "memory",
    "podCpu",
    "podMemory",
    "podNetworkReceive",
    "podNetworkTransmit",
)


@dataclass(frozen=True, slots=True)
class NodeMappingArgs:
    """How a result series is matched to a node.

    by=label: the value of `label` (default "node") is a node name, or one of
    the node's addresses.  by=instance: the `instance` label's host part (port
    stripped when instancePortStrip) is matched against node names and
    addresses (InternalIP first, then Hostname, then the others).
    """

    by: str = BY_LABEL
    label: str = "node"
    instance_port_strip: bool = True

    @property
    def group_label(self) -> str:
        """The label default queries aggregate by ($by)."""
        return self.label if self.by == BY_LABEL else "instance"

    @classmethod
    def decode(cls, f: Fields) -> NodeMappingArgs:
        d = cls()
        by = f.str("by", d.by, choices=MAPPING_MODES)
        label = f.str("label", d.label)
        if not LABEL_NAME.match(label):
            f.errs.invalid(
                f"{f.path}.label", label, "must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"
            )
            label = d.label
        strip = f.bool("instancePortStrip", d.instance_port_strip)
        f.finish()
        return cls(by, label, strip)

    def encode(self) -> dict[str, Any]:
        return {"by": self.by, "label": self.label, "instancePortStrip": self.instance_port_strip}


@dataclass(frozen=True, slots=True)
class QueriesArgs:
    """PromQL overrides; "" means the default of netsched.metrics.queries.

    Queries may use $by (the mapping label) and $window (rateWindow).  Each node query must
    return an instant vector with one series per node, each pod query one series per pod
    with `namespace` and `pod` labels.
    """

    network_receive: str = ""
    network_transmit: str = ""
    link_speed: str = ""
    cpu: str = ""
    memory: str = ""
    pod_cpu: str = ""
    pod_memory: str = ""
    pod_network_receive: str = ""
    pod_network_transmit: str = ""

    @classmethod
    def decode(cls, f: Fields) -> QueriesArgs:
        got = []
        for key in QUERY_FIELDS:
            q = f.str(key, "")
            if f.has(key) and not q.strip():
                f.errs.invalid(
                    f"{f.path}.{key}", q, "must be a PromQL expression (omit the field for the default)"
                )
            got.append(q.strip())
        f.finish()
        return cls(*got)

    def encode(self) -> dict[str, Any]:
        values = (
            self.network_receive,
            self.network_transmit,
            self.link_speed,
            self.cpu,
            self.memory,
            self.pod_cpu,
            self.pod_memory,
            self.pod_network_receive,
            self.pod_network_transmit,
        )
        return {k: v for k, v in zip(QUERY_FIELDS, values, strict=True) if v}


def cover_margin(derived: float, lifetime: float, max_sample_age: float) -> float:
    """The default coverMarginSeconds under an explicit maxLifetimeSeconds: the one derived
    from rateWindow, capped so that a sample taken after it can still arrive within the
    lifetime (the default lifetime's rule, inverted), never below MIN_COVER_MARGIN_SECONDS
    (the default before it followed rateWindow: every lifetime valid then stays valid)."""
    return max(MIN_COVER_MARGIN_SECONDS, min(derived, lifetime - max_sample_age))


@dataclass(frozen=True, slots=True)
class EstimationArgs:
    """Load added for pods reserved since a node's latest sample (see estimation.py)."""

    default_bandwidth_bytes: float = DEFAULT_BANDWIDTH_BYTES
    cpu_factor: float = DEFAULT_CPU_FACTOR
    memory_factor: float = DEFAULT_MEMORY_FACTOR
    # decode derives it from rateWindow: max(MIN_COVER_MARGIN_SECONDS, the window); 1m here.
    # Under an explicit maxLifetimeSeconds it is capped at lifetime - maxSampleAge (cover_margin).
    cover_margin_seconds: float = 60.0
    # decode derives it from maxSampleAgeSeconds: max(2 x maxSampleAge, coverMargin + maxSampleAge).
    max_lifetime_seconds: float = 2 * MAX_AGE_POLL_INTERVALS * DEFAULT_POLL_INTERVAL_SECONDS

    @classmethod
    def decode(cls, f: Fields, max_sample_age: float, rate_window: float) -> EstimationArgs:
        d = cls()
        bw = f.float("defaultBandwidthBytes", d.default_bandwidth_bytes, min=0)
        cpu = f.float("cpuFactor", d.cpu_factor, min=0, max=10)
        mem = f.float("memoryFactor", d.memory_factor, min=0, max=10)
        defaulted = not f.has("coverMarginSeconds")
        margin = f.float("coverMarginSeconds", max(MIN_COVER_MARGIN_SECONDS, rate_window), min=0)
        # Long enough for a sample taken after the margin to arrive, and two
        # sample ages at least: an estimate older than that is a pod the metrics never saw.
        default_lifetime = max(2 * max_sample_age, margin + max_sample_age)
        lifetime = f.float("maxLifetimeSeconds", default_lifetime, min=1)
        if defaulted and f.has("maxLifetimeSeconds"):
            margin = cover_margin(margin, lifetime, max_sample_age)
        if lifetime <= margin:
            why = f"defaulted to {margin:g}; set coverMarginSeconds lower" if defaulted else f"{margin:g}"
            f.errs.invalid(
                f"{f.path}.maxLifetimeSeconds",
                lifetime,
                f"must be greater than coverMarginSeconds ({why})",
            )
            lifetime = default_lifetime
        f.finish()
        return cls(bw, cpu, mem, margin, lifetime)

    def encode(self) -> dict[str, Any]:
        return {
            "defaultBandwidthBytes": self.default_bandwidth_bytes,
            "cpuFactor": self.cpu_factor,
            "memoryFactor": self.memory_factor,
            "coverMarginSeconds": self.cover_margin_seconds,
            "maxLifetimeSeconds": self.max_lifetime_seconds,
        }


@dataclass(frozen=True, slots=True)
class ConnectionKey:
    """What makes two sources share a poller and its cache."""

    address: str
    bearer_token_file: str
    ca_file: str
    insecure_skip_verify: bool
    timeout_seconds: float
    poll_interval_seconds: float
    node_mapping: NodeMappingArgs
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES


@dataclass(frozen=True, slots=True)
class PrometheusArgs:
    prometheus_address: str = DEFAULT_ADDRESS
    bearer_token_file: str = ""
    ca_file: str = ""
    insecure_skip_verify: bool = False
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    poll_interval_seconds: float = DEFAULT_POLL_INTERVAL_SECONDS
    max_sample_age_seconds: float = MAX_AGE_POLL_INTERVALS * DEFAULT_POLL_INTERVAL_SECONDS
    stale_policy: str = FAIL_OPEN
    node_mapping: NodeMappingArgs = field(default_factory=NodeMappingArgs)
    queries: QueriesArgs = field(default_factory=QueriesArgs)
    rate_window: str = DEFAULT_RATE_WINDOW
    estimation: EstimationArgs = field(default_factory=EstimationArgs)
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    # Poll per-pod usage (cAdvisor) next to each node metric: the ledger's load of a pod that
    # leaves or just started, where Prometheus has it (netsched/metrics/ledger.py).
    per_pod_usage: bool = True

    @property
    def rate_window_seconds(self) -> float:
        return duration_seconds(self.rate_window)

    @property
    def connection(self) -> ConnectionKey:
        return ConnectionKey(
            self.prometheus_address,
            self.bearer_token_file,
            self.ca_file,
            self.insecure_skip_verify,
            self.timeout_seconds,
            self.poll_interval_seconds,
            self.node_mapping,
            self.max_response_bytes,
        )

    @property
    def fail_closed(self) -> bool:
        return self.stale_policy == FAIL_CLOSED

    @classmethod
    def decode(cls, f: Fields) -> PrometheusArgs:
        d = cls()
        address = f.str("prometheusAddress", d.prometheus_address)
        problem = address_problem(address)
        if problem:
            f.errs.invalid(f"{f.path}.prometheusAddress", address, problem)
            address = d.prometheus_address
        token = f.str("bearerTokenFile", "")
        ca = f.str("caFile", "")
        insecure = f.bool("insecureSkipVerify", False)
        if insecure and ca:
            f.errs.invalid(f"{f.path}.insecureSkipVerify", True, "cannot be combined with caFile")
        poll = f.float("pollIntervalSeconds", d.poll_interval_seconds, min=1)
        # A poll must end before the next is due: default to half the interval when that is shorter.
        timeout = f.float("timeoutSeconds", min(d.timeout_seconds, poll / 2), min=0.1)
        if timeout >= poll:
            f.errs.invalid(
                f"{f.path}.timeoutSeconds", timeout, f"must be less than pollIntervalSeconds ({poll:g})"
            )
            timeout = min(d.timeout_seconds, poll / 2)
        max_age = f.float("maxSampleAgeSeconds", MAX_AGE_POLL_INTERVALS * poll)
        if max_age < poll:
            f.errs.invalid(
                f"{f.path}.maxSampleAgeSeconds", max_age, f"must be at least pollIntervalSeconds ({poll:g})"
            )
            max_age = MAX_AGE_POLL_INTERVALS * poll
        max_bytes = f.int("maxResponseBytes", d.max_response_bytes, min=MIN_MAX_RESPONSE_BYTES)
        policy = f.str("stalePolicy", d.stale_policy, choices=STALE_POLICIES)
        mapping = NodeMappingArgs.decode(f.sub("nodeMapping"))
        queries = QueriesArgs.decode(f.sub("queries"))
        window = f.str("rateWindow", d.rate_window)
        if not _DURATION.match(window):
            f.errs.invalid(
                f"{f.path}.rateWindow", window, 'must be a Prometheus duration such as "1m" or "30s"'
            )
            window = d.rate_window
        estimation = EstimationArgs.decode(f.sub("estimation"), max_age, duration_seconds(window))
        per_pod = f.bool("perPodUsage", d.per_pod_usage)
        f.finish()
        return cls(
            address.rstrip("/"),
            token,
            ca,
            insecure,
            timeout,
            poll,
            max_age,
            policy,
            mapping,
            queries,
            window,
            estimation,
            max_bytes,
            per_pod,
        )

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "prometheusAddress": self.prometheus_address,
            "timeoutSeconds": self.timeout_seconds,
            "pollIntervalSeconds": self.poll_interval_seconds,
            "maxResponseBytes": self.max_response_bytes,
            "maxSampleAgeSeconds": self.max_sample_age_seconds,
            "stalePolicy": self.stale_policy,
            "nodeMapping": self.node_mapping.encode(),
            "rateWindow": self.rate_window,
            "estimation": self.estimation.encode(),
            "perPodUsage": self.per_pod_usage,
        }
        if self.bearer_token_file:
            out["bearerTokenFile"] = self.bearer_token_file
        if self.ca_file:
            out["caFile"] = self.ca_file
        if self.insecure_skip_verify:
            out["insecureSkipVerify"] = True
        queries = self.queries.encode()
        if queries:
            out["queries"] = queries
        return out


def address_problem(address: str) -> str:
    """Why `address` is not a usable Prometheus base URL ("" when it is)."""
    try:
        parts = urlsplit(address)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as e:
        return f"not a URL: {e}"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname:
        return "must name a host"
    if parts.query or parts.fragment:
        return "must not have a query string or fragment"
    return ""


def redact(address: str) -> str:
    """The address without user:password, for logs and metric labels."""
    parts = urlsplit(address)
    if parts.username is None and parts.password is None:
        return address
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return parts._replace(netloc=host).geturl()
