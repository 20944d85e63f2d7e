"""Background load per node: what the nodes are doing besides the simulated pods.

The `metrics:` section is a mapping (or a compact string, or a list of
either) applied in order; within one mapping `default` applies to every
node, then each `skew` entry to its hot nodes, then entries named after a
node to that node.  Later layers override earlier ones per metric:

    metrics:
      default: {cpu: 0.2, memory: 0.3, networkUtilization: [0.0, 0.1]}   # a range: drawn per node
      skew: {hot: 10, networkUtilization: [0.6, 0.8], pick: random}      # 10 nodes picked at random
      node-07: {network: "6Gbit", cpu: [[0, 0.2], [60, 0.9]]}            # a time series (seconds, value)
      node-08: {linkSpeed: "25Gbit"}

Network is per direction (received = transmitted): `network` as a bit rate,
`networkBytesPerSecond`, or `networkUtilization` as a fraction of the node's
link speed.  `cpu` and `memory` are fractions (0.6 or "60%").  A timeline
`load` change takes the same forms (decode_changes), less `linkSpeed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsched.framework.fields import ErrorList, Fields, join
from netsched.simulate import compact
from netsched.simulate.generators import DEFAULT_LINK_SPEED_BITS
from netsched.simulate.units import Curve, bits_per_second, fraction, is_range, is_series, number, shown

NETWORK_KEYS = ("network", "networkBytesPerSecond", "networkUtilization")
METRIC_KEYS = (*NETWORK_KEYS, "cpu", "memory", "linkSpeed")
RESERVED = ("default", "skew")
PICKS = ("random", "first", "last")

# How each field's values read: (parser, what the Curve holds).
_PARSERS: dict[str, Callable[[Any], float]] = {
    "network": lambda v: bits_per_second(v) / 8,
    "networkBytesPerSecond": number,
    "networkUtilization": fraction,
    "cpu": fraction,
    "memory": fraction,
    "linkSpeed": lambda v: bits_per_second(v) / 8,
}


@dataclass(frozen=True, slots=True)
class Background:
    """One node's load without the simulated pods; network in bytes/s each way."""

    network: Curve
    cpu: Curve
    memory: Curve


# A field's value before it is drawn for a node: node row -> Curve.
Spec = Callable[[np.random.Generator], Curve]


def _spec(raw: Any, path: str, key: str, errs: ErrorList) -> Spec | None:
    parse = _PARSERS[key]
    if isinstance(raw, dict):
        if key == "linkSpeed":
            errs.invalid(path, shown(raw), "a link speed is constant: give a value or a [lo, hi] range")
            return None
        return _jitter(Fields(raw, path, errs), parse)
    try:
        if is_series(raw):
            if key == "linkSpeed":
                raise ValueError("a link speed is constant: give a value or a [lo, hi] range")
            points = []
            for p in raw:
                if len(p) != 2:
                    raise ValueError("a time series is a list of [seconds, value] pairs")
                points.append((number(p[0]), parse(p[1])))
            if any(b[0] < a[0] for a, b in zip(points, points[1:], strict=False)):
                raise ValueError("time series points must be in time order")
            curve = Curve(tuple(points))
            return lambda _rng: curve
        if is_range(raw):
            lo, hi = parse(raw[0]), parse(raw[1])
            if lo > hi:
                raise ValueError("range must be [lo, hi] with lo <= hi")
            return lambda rng: Curve.constant(float(rng.uniform(lo, hi)))
        if isinstance(raw, list):
            raise ValueError("must be a value, a [lo, hi] range or a [[seconds, value], ...] series")
        value = parse(raw)
    except ValueError as e:
        errs.invalid(path, shown(raw), str(e))
        return None
    const = Curve.constant(value)
    return lambda _rng: const


def _jitter(f: Fields, parse: Callable[[Any], float]) -> Spec | None:
    """`{around, plusMinus, forSeconds, stepSeconds, spikeTo, spikeEverySeconds}`: for
    forSeconds, a level drawn every stepSeconds (a scrape interval: 15 by default) uniformly
    within around +- plusMinus, and every spikeEverySeconds one step at spikeTo (a single-scrape
    spike); `around` after.  Drawn per node."""
    values: dict[str, float] = {}
    for name in ("around", "plusMinus", "spikeTo"):
        raw = f.any(name)
        if raw is None:
            continue
        try:
            values[name] = parse(raw)
        except ValueError as e:
            f.errs.invalid(join(f.path, name), shown(raw), str(e))
    if not f.has("around"):
        f.errs.required(join(f.path, "around"), "the level the value jitters around")
    if not f.has("forSeconds"):
        f.errs.required(join(f.path, "forSeconds"), "how long it jitters")
    seconds = f.float("forSeconds", 0.0, min=0)
    step = f.float("stepSeconds", 15.0, min=1)
    every = f.float("spikeEverySeconds", 120.0, min=step)
    if f.has("spikeEverySeconds") and not f.has("spikeTo"):
        f.errs.required(join(f.path, "spikeTo"), "the spikes' value")
    f.finish()
    if "around" not in values or not f.has("forSeconds"):
        return None
    around, spread, spike = values["around"], values.get("plusMinus", 0.0), values.get("spikeTo")
    steps = int(seconds // step)
    spike_steps = max(int(every // step), 1)

    def draw(rng: np.random.Generator) -> Curve:
        points: list[tuple[float, float]] = []
        for k in range(steps):
            spiking = spike is not None and k % spike_steps == spike_steps - 1
            v = (
                spike
                if spiking and spike is not None
                else float(rng.uniform(around - spread, around + spread))
            )
            points += [(k * step, max(v, 0.0)), ((k + 1) * step, max(v, 0.0))]
        points.append((steps * step, around))
        return Curve(tuple(points))

    return draw


def _layer(f: Fields, state: _Nodes) -> dict[str, Spec]:
    """The metric fields of one entry (default, a skew, a node)."""
    out: dict[str, Spec] = {}
    given = [k for k in NETWORK_KEYS if f.has(k)]
    if len(given) > 1:
        f.errs.forbidden(join(f.path, given[1]), f"give one of {', '.join(NETWORK_KEYS)}, not {given[0]} too")
    for key in METRIC_KEYS:
        raw = f.any(key)
        if raw is None:
            continue
        if key == "linkSpeed" and not state.link_speed:
            f.errs.forbidden(join(f.path, key), "a link speed is constant: set it under metrics or nodes")
            continue
        spec = _spec(raw, join(f.path, key), key, f.errs)
        if spec is not None:
            out[key] = spec
    return out


class _Nodes:
    """Per-node choices of each layer, resolved after all layers are read."""

    def __init__(self, names: list[str], *, link_speed: bool = True) -> None:
        self.names = names
        self.link_speed = link_speed  # may a layer set it (not in a timeline change)
        self.index = {n: i for i, n in enumerate(names)}
        self.chosen: list[dict[str, Curve]] = [{} for _ in names]

    def apply(self, rows: list[int], layer: dict[str, Spec], rng: np.random.Generator) -> None:
        for row in rows:
            got = self.chosen[row]
            for key, spec in layer.items():
                if key in NETWORK_KEYS:
                    for k in NETWORK_KEYS:
                        got.pop(k, None)
                got[key] = spec(rng)


def decode_background(
    raw: Any,
    errs: ErrorList,
    rng: np.random.Generator,
    nodes: list[str],
    link_speed_bits: dict[str, float],
) -> tuple[dict[str, Background], dict[str, float]]:
    """(background per node, link speed in bytes/s per node)."""
    state = _Nodes(nodes)
    _read(raw, "metrics", errs, rng, state)
    return _resolve(state, link_speed_bits)


def decode_changes(
    raw: Any,
    path: str,
    errs: ErrorList,
    rng: np.random.Generator,
    nodes: list[str],
    link_speed: Mapping[str, float],
) -> dict[str, dict[str, Curve]]:
    """A timeline `load` change, written as `metrics:` is (less linkSpeed): per node it names,
    the metrics it changes, "network" (bytes/s each way), "cpu" and "memory" (fractions)."""
    state = _Nodes(nodes, link_speed=False)
    _read(raw, path, errs, rng, state)
    out: dict[str, dict[str, Curve]] = {}
    for name, got in zip(state.names, state.chosen, strict=True):
        changed = {k: v for k, v in got.items() if k in ("cpu", "memory")}
        network = got.get("network") or got.get("networkBytesPerSecond")
        if network is None and "networkUtilization" in got:
            network = got["networkUtilization"].scaled(link_speed[name])
        if network is not None:
            changed["network"] = network
        if changed:
            out[name] = changed
    return out


def _read(raw: Any, path: str, errs: ErrorList, rng: np.random.Generator, state: _Nodes) -> None:
    entries: list[tuple[str, Any]] = []
    if isinstance(raw, list):
        entries = [(join(path, i), item) for i, item in enumerate(raw)]
    elif raw is not None:
        entries = [(path, raw)]
    for at, entry in entries:
        if isinstance(entry, str):
            try:
                entry = compact.metrics_rule(entry)
            except ValueError as e:
                errs.invalid(at, entry, str(e))
                continue
        _decode_mapping(Fields(entry, at, errs), state, rng)


def _decode_mapping(f: Fields, state: _Nodes, rng: np.random.Generator) -> None:
    if f.has("default"):
        state.apply(list(range(len(state.names))), _layer(_finished(f.sub("default")), state), rng)
    skews = f.any("skew")
    if skews is not None:
        items = skews if isinstance(skews, list) else [skews]
        for i, item in enumerate(items):
            path = join(join(f.path, "skew"), i) if isinstance(skews, list) else join(f.path, "skew")
            _decode_skew(Fields(item, path, f.errs), state, rng)
    f.any("default")  # mark as read when absent
    for name in f.raw:
        if name in RESERVED:
            continue
        path = join(f.path, str(name))
        row = state.index.get(str(name))
        if row is None:
            f.errs.invalid(path, str(name), "no such node in nodes (or a typo of default / skew)")
            continue
        f.seen.add(name)
        state.apply([row], _layer(_finished(f.sub(name)), state), rng)


def _finished(f: Fields) -> Fields:
    """Flags unknown keys of a metric entry once its fields are read (see _layer)."""
    for k in f.raw:
        if k not in METRIC_KEYS:
            f.errs.unknown_field(join(f.path, str(k)))
    return f


def _decode_skew(f: Fields, state: _Nodes, rng: np.random.Generator) -> None:
    n = len(state.names)
    hot = f.int("hot", 0, min=0)
    if hot > n:
        f.errs.invalid(join(f.path, "hot"), hot, f"more hot nodes than nodes ({n})")
        hot = n
    pick = f.str("pick", "random", choices=PICKS)
    layer = _layer(f, state)
    f.finish()
    if pick == "first":
        rows = list(range(hot))
    elif pick == "last":
        rows = list(range(n - hot, n))
    else:
        rows = sorted(int(r) for r in rng.choice(n, size=hot, replace=False))
    state.apply(rows, layer, rng)


def _resolve(
    state: _Nodes, link_speed_bits: dict[str, float]
) -> tuple[dict[str, Background], dict[str, float]]:
    zero = Curve.constant(0.0)
    backgrounds: dict[str, Background] = {}
    speeds: dict[str, float] = {}
    for name, got in zip(state.names, state.chosen, strict=True):
        link = got.get("linkSpeed")
        speed = link.at(0.0) if link is not None else link_speed_bits.get(name, DEFAULT_LINK_SPEED_BITS) / 8
        speeds[name] = speed
        network = got.get("network") or got.get("networkBytesPerSecond")
        if network is None and "networkUtilization" in got:
            network = got["networkUtilization"].scaled(speed)
        backgrounds[name] = Background(network or zero, got.get("cpu", zero), got.get("memory", zero))
    return backgrounds, speeds
