"""`netsched demo`: what netsched is for, on one machine, in a few seconds.

No Kubernetes needed. The same pods are placed twice on the same nodes, some
of them hot (busy CPU and links): once by kube's default plugins, once by
netsched's load-aware profile (NetworkTraffic, LoadAware, LoadThreshold)
reading the nodes' load from Prometheus. Each run is the real scheduler over
HTTP to the in-process fake API server; the table shows where each profile
put the pods, and how many landed on hot nodes.

The load comes from a synthetic node_exporter scraped by a real Prometheus
when the `prometheus` binary is installed (Debian's package), else from an
in-process fake Prometheus answering the same queries (--prometheus picks).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import random
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from netsched import logutil
from netsched.flags import HelpFormatter, flag_count
from netsched.framework.extension_points import PluginFactory

if TYPE_CHECKING:  # imported when a run starts: `netsched --help` stays fast
    from netsched.config import SchedulerConfig
    from netsched.fakemetrics.prometheus import VectorSample
    from netsched.framework.registry import Registry

log = logging.getLogger(__name__)

KUBE_DEFAULT_PROFILE = "default-scheduler"
LOAD_AWARE_PROFILE = "netsched"
LINK = 125_000_000.0  # bytes/s: the synthetic nodes' 1 Gb/s links
CPUS = 32
# LoadThreshold's limits in LOAD_AWARE_CONFIG: a node above any of them is hot.
LIMITS = {"cpu": 0.65, "network": 0.80, "memory": 0.95}

KUBE_DEFAULT_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {KUBE_DEFAULT_PROFILE}
"""

# The load-aware plugins with deploy/configmap.yaml's weights (TrafficAffinity aside: no mesh here),
# as a profile's `plugins:` block; the benchmarks and tests of this profile reuse it.
LOAD_AWARE_PLUGINS = """\
  plugins:
    multiPoint:
      enabled:
      - name: NetworkTraffic
        weight: 3
      - name: LoadAware
        weight: 2
      - name: LoadThreshold
"""

# ${PROMETHEUS} is the synthetic Prometheus' address (a --config may use it too).
LOAD_AWARE_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {LOAD_AWARE_PROFILE}
{LOAD_AWARE_PLUGINS}  pluginConfig:
  - name: NetworkTraffic
    args:
      prometheus: &prometheus
        prometheusAddress: ${{PROMETHEUS}}
        pollIntervalSeconds: 1
        timeoutSeconds: 0.5
        maxSampleAgeSeconds: 30
        rateWindow: 4s
  - name: LoadAware
    args:
      prometheus: *prometheus
  - name: LoadThreshold
    args:
      networkUtilizationPercent: {LIMITS["network"] * 100:g}
      cpuUtilizationPercent: {LIMITS["cpu"] * 100:g}
      memoryUtilizationPercent: {LIMITS["memory"] * 100:g}
      prometheus: *prometheus
"""


@dataclass(frozen=True, slots=True)
class Load:
    cpu: float
    network: float  # busier direction over the link speed
    memory: float

    @property
    def hot(self) -> bool:
        return self.cpu > LIMITS["cpu"] or self.network > LIMITS["network"] or self.memory > LIMITS["memory"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="netsched demo", description=__doc__.split("\n\n")[0], formatter_class=HelpFormatter
    )
    p.add_argument(
        "--nodes", type=flag_count, default=12, help="fake nodes to create (every third one is hot)"
    )
    p.add_argument("--pods", type=flag_count, default=60, help="pending pods each profile places")
    p.add_argument(
        "--seed",
        type=int,
        default=1,
        help="seed for the pods' sizes, the nodes' load and the profiles' tie-breaks: a seed places "
        "the same way each run (a real Prometheus polls at wall-clock times: on a busy machine a "
        "few pods may still move between equally light nodes)",
    )
    p.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for each profile's placements"
    )
    p.add_argument(
        "--config",
        default="",
        help="KubeSchedulerConfiguration to compare with kube's default profile instead of netsched's "
        "load-aware one (its first profile places the pods; ${PROMETHEUS} is the synthetic Prometheus)",
    )
    p.add_argument(
        "--prometheus",
        choices=("auto", "real", "fake"),
        default="auto",
        help="real: the prometheus binary scraping a synthetic node_exporter; fake: an in-process "
        "fake answering the same queries; auto: real when the binary is installed",
    )
    p.add_argument(
        "-v", "--v", dest="verbosity", type=int, default=0, metavar="Level", help="scheduler log verbosity"
    )
    p.add_argument(
        "--logging-format", choices=logutil.FORMATS, default="text", help="text (klog lines) or json"
    )
    return p


def main(argv: Sequence[str], plugins: Sequence[PluginFactory] = ()) -> int:
    opts = parser().parse_args(list(argv))
    logutil.setup(opts.verbosity, opts.logging_format)
    if opts.verbosity < 2:  # the tables are the output; the scheduler's own lines need -v 2
        logging.getLogger().setLevel(logging.WARNING)
    from netsched.app import build_registry
    from netsched.config import ConfigError
    from netsched.options import print_config_error

    registry = build_registry(plugins)
    try:  # read and checked as `netsched --config` would, before anything starts
        compared = _compared_config(opts.config, registry)
    except ConfigError as e:
        print_config_error(e, opts.config)
        return 1
    rng = random.Random(opts.seed)
    loads = {f"node-{i:02d}": _load(i, rng) for i in range(opts.nodes)}
    pods = [
        (rng.choice(["250m", "500m", "1", "2"]), rng.choice(["256Mi", "512Mi", "1Gi", "2Gi"]))
        for _ in range(opts.pods)
    ]
    try:
        binary, what = _which_prometheus(opts.prometheus)
        hot = f"cpu {LIMITS['cpu']:.0%}, network {LIMITS['network']:.0%} or memory {LIMITS['memory']:.0%}"
        _say(f"Node load from {what}; hot = above {hot}")
        with _prometheus(binary, loads) as url:
            runs: list[tuple[str, dict[str, str]]] = []
            for label, text, file in ((KUBE_DEFAULT_PROFILE, KUBE_DEFAULT_CONFIG, ""), compared):
                cfg = _config(text, file, url, registry)
                cfg.leader_election.leader_elect = False
                _say(f"Placing {len(pods)} pods on {len(loads)} nodes with {label} ...")
                runs.append((label, _place(cfg, registry, loads, pods, opts.timeout, opts.seed)))
    except ConfigError as e:
        print_config_error(e, opts.config)
        return 1
    except OSError as e:
        print(f"netsched demo: {e}", file=sys.stderr)
        return 1
    print()
    _report(loads, runs, len(pods))
    return 0


PROMETHEUS = "${PROMETHEUS}"


def _compared_config(path: str, registry: Registry) -> tuple[str, str, str]:
    """(column label, config text, file) of what kube's default profile is compared with: the
    load-aware profile, or --config's file read and checked as `netsched --config` reads it (the
    same errors), labelled by its file name: two files may name their profiles alike."""
    from netsched.config import read_config_file

    if not path:
        return LOAD_AWARE_PROFILE, LOAD_AWARE_CONFIG, ""
    text = read_config_file(path)
    _config(text, path, "http://127.0.0.1:9090", registry)
    return Path(path).name, text, path


def _config(text: str, file: str, prometheus: str, registry: Registry) -> SchedulerConfig:
    """The config of one run, its ${PROMETHEUS} filled in; --config's `file` loads as
    `netsched --config` loads it (an empty file refused, an unnamed profile is netsched)."""
    from netsched.config import load_config
    from netsched.options import NETSCHED_SCHEDULER_NAME

    text = text.replace(PROMETHEUS, prometheus)
    if not file:
        return load_config(text, registry)
    return load_config(text, registry, file=file, default_scheduler_name=NETSCHED_SCHEDULER_NAME)


def _say(line: str) -> None:
    """A line of the demo's own output, shown at once (the runs take seconds)."""
    print(line, flush=True)


def _load(i: int, rng: random.Random) -> Load:
    """Every third node hot (CPU and link above LoadThreshold's limits), the others light."""
    if i % 3 == 0:
        return Load(cpu=0.85, network=0.9, memory=0.7)
    return Load(cpu=round(rng.uniform(0.1, 0.4), 2), network=round(rng.uniform(0.05, 0.3), 2), memory=0.3)


def _which_prometheus(mode: str) -> tuple[str | None, str]:
    """(binary or None for the in-process fake, what the first line says about it)."""
    from netsched.fakemetrics import prometheus_binary

    binary = prometheus_binary()
    if mode == "real" and binary is None:
        raise OSError("--prometheus real: no prometheus binary found (apt-get install prometheus)")
    if mode == "fake" or binary is None:
        why = "no prometheus binary found" if binary is None else "--prometheus fake"
        return None, f"an in-process fake Prometheus ({why})"
    return binary, f"Prometheus {_version(binary)} ({binary}) scraping a synthetic node_exporter"


@contextlib.contextmanager
def _prometheus(binary: str | None, loads: dict[str, Load]) -> Iterator[str]:
    """The address of a Prometheus serving `loads` (`binary`'s, or the in-process fake's), for
    the run's duration."""
    if binary is None:
        with _fake_prometheus(loads) as url:
            yield url
        return
    with _real_prometheus(binary, loads) as url:
        yield url


@contextlib.contextmanager
def _fake_prometheus(loads: dict[str, Load]) -> Iterator[str]:
    from netsched.fakemetrics import FakePrometheus, FakePrometheusServer
    from netsched.metrics.args import PrometheusArgs
    from netsched.metrics.queries import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX, builtin_query

    fake = FakePrometheus()
    args = PrometheusArgs(rate_window="4s")  # the queries LOAD_AWARE_CONFIG's args make
    series = {
        CPU: {n: v.cpu for n, v in loads.items()},
        MEMORY: {n: v.memory for n, v in loads.items()},
        NETWORK_RX: {n: v.network * LINK for n, v in loads.items()},
        NETWORK_TX: {n: v.network * LINK / 2 for n, v in loads.items()},
        LINK_SPEED: dict.fromkeys(loads, LINK),
    }
    for metric, values in series.items():
        fake.set(builtin_query(metric, args), values)
    with FakePrometheusServer(fake) as server:
        yield server.url


@contextlib.contextmanager
def _real_prometheus(binary: str, loads: dict[str, Load]) -> Iterator[str]:
    from netsched.fakemetrics import FakeNode, PrometheusServer, SyntheticExporter

    nodes = [FakeNode(name, f"10.0.0.{i + 1}", cpus=4) for i, name in enumerate(loads)]
    with SyntheticExporter(nodes) as exporter, tempfile.TemporaryDirectory() as tmp:
        for name, v in loads.items():
            exporter.set_load(name, rx=v.network * LINK, tx=v.network * LINK / 2, cpu=v.cpu, memory=v.memory)
        with PrometheusServer([exporter.target], binary=binary, workdir=tmp) as prom:
            _say("Waiting for Prometheus to scrape steady rates ...")
            # rate() over 4s needs a few 1s scrapes, and a window that began before set_load()
            # mixes the old rates in: wait until every node's CPU rate is the one set.
            query = '1 - avg by (node) (rate(node_cpu_seconds_total{mode="idle"}[4s]))'
            try:
                prom.wait_for(query, lambda got: _settled(got, loads), timeout=30)
            except TimeoutError as e:
                raise OSError(
                    f"Prometheus at {prom.url} has no steady CPU rates after 30s:\n{prom.log_tail()}"
                ) from e
            yield prom.url


def _settled(series: list[VectorSample], loads: dict[str, Load]) -> bool:
    got = {s["metric"].get("node"): float(s["value"][1]) for s in series}
    return set(got) == set(loads) and all(abs(got[n] - v.cpu) < 0.02 for n, v in loads.items())


def _version(binary: str) -> str:
    import subprocess

    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10, check=False)
    words = (out.stdout or out.stderr).split()
    return words[2] if len(words) > 2 else "?"


def _place(
    cfg: SchedulerConfig,
    registry: Registry,
    loads: dict[str, Load],
    pods: list[tuple[str, str]],
    timeout: float,
    seed: int,
) -> dict[str, str]:
    """Pod name -> node (or "" if unplaced) after one profile placed every pod on fresh nodes."""
    from netsched.app import AppOptions, SchedulerApp
    from netsched.fakeapi import FakeAPIServer
    from netsched.kube import KubeAPI, build_api_client
    from netsched.objects import make_node, make_pod

    profile = cfg.profiles[0].scheduler_name
    with FakeAPIServer() as server, tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        server.write_kubeconfig(kubeconfig)
        for i, name in enumerate(loads):
            node = (
                make_node(name)
                .capacity(cpu=str(CPUS), memory=f"{2 * CPUS}Gi")
                .address("InternalIP", f"10.0.0.{i + 1}")
            )
            server.create("nodes", node.obj())
        for i, (cpu, mem) in enumerate(pods):
            server.create(
                "pods",
                make_pod(f"web-{i:03d}")
                .scheduler(profile)
                .label("app", "web")
                .req(cpu=cpu, memory=mem)
                .obj(),
            )
        client = build_api_client(kubeconfig, qps=1000, burst=2000, pool_size=cfg.parallelism + 8)
        app = SchedulerApp(
            cfg, registry, KubeAPI(client), options=AppOptions(metrics_bind_address="127.0.0.1:0")
        )
        app.scheduler.seed(seed)
        app.start_informers(sync_timeout=30)
        app.start_background()
        # Production starts scheduling beside the first poll (the stale policy covers the pods
        # placed before it lands); the demo waits for it so what it shows is the measured load.
        if not app.hub.wait_polled(timeout=30):
            log.warning("First metrics poll still running; the first pods are placed by requests")
        app.start_scheduling()

        def settled() -> bool:
            """Every pod bound or parked as unschedulable, and no binding in flight."""
            listed = server.list("pods", None)
            bound = sum(1 for p in listed if p["spec"].get("nodeName"))
            stuck = sum(app.queue.counts().get(q, 0) for q in ("unschedulable", "gated"))
            return bound + stuck >= len(listed) and app.scheduler.binder.inflight == 0

        try:
            server.wait_for(settled, timeout=timeout, interval=0.05)
        except TimeoutError:
            log.warning(
                "Placements still running at the timeout; showing those made profile=%s timeout=%g",
                profile,
                timeout,
            )
        app.shutdown(timeout=5)
        return {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in server.list("pods", None)}


def _report(loads: dict[str, Load], runs: list[tuple[str, dict[str, str]]], total: int) -> None:
    labels = [label for label, _ in runs]
    width = max(18, *(len(label) for label in labels))
    print(
        f"{'NODE':<10} {'CPU':>5} {'NET':>5} {'MEM':>5} {'HOT':>4} "
        + " ".join(f"{n:>{width}}" for n in labels)
    )
    per_node = [{node: sum(1 for v in placed.values() if v == node) for node in loads} for _, placed in runs]
    for node, v in loads.items():
        counts = " ".join(f"{placed[node]:>{width}}" for placed in per_node)
        print(
            f"{node:<10} {v.cpu:>5.0%} {v.network:>5.0%} {v.memory:>5.0%} {'yes' if v.hot else 'no':>4} {counts}"
        )
    print()
    for label, placed in runs:
        on_hot = sum(1 for node in placed.values() if node and loads[node].hot)
        bound = sum(1 for node in placed.values() if node)
        print(f"{label}: placed {bound}/{total} pods, {on_hot} on hot nodes")
