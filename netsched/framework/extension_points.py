"""The plugin contract: a plugin's args, the Plugin base, one base class per extension point.

A plugin is a class with a constant `name` that subclasses the base class of
every extension point it implements; enabling it under `multiPoint` turns on
all of them.  Plugins are built once per profile with their typed args and a
Handle, and keep their state on the instance (never in module globals, so two
profiles never share args by accident).

Filter and Score have two forms.  The per-node form (`filter`, `score`) is the
simple Go-like one and is required: preemption runs filters against a single
"what if" NodeInfo.  The batch form (`filter_nodes`, `score_nodes`) works on
the snapshot's node table as NumPy arrays and is what the runtime calls; its
default loops over the per-node form.  In-tree plugins implement both.

What the bases take and give lives next door, in modules the queue and the
runtime read without the plugin classes: the Handle (seams.py), the
Rejections and Diagnosis filters add up to (diagnosis.py), the cluster events
a plugin registers for (cluster_events.py) and the faults (errors.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar, cast, get_args, get_origin

import numpy as np

from netsched.framework.cluster_events import ClusterEventWithHint
from netsched.framework.cycle_state import CycleState
from netsched.framework.diagnosis import Diagnosis, Rejection
from netsched.framework.errors import PluginArgsError, PluginError
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.seams import Handle
from netsched.framework.snapshot import BoolArray, IntArray, Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import NodeInfo, PodInfo, QueuedPodInfo

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0

A = TypeVar("A", bound="PluginArgs")


class PluginArgs:
    """Typed, defaulted, validated args of one plugin (the pluginConfig[].args block).

    Subclasses are dataclasses whose field defaults are the documented defaults.
    `decode` must record every problem in `errs` with its field path and still
    return a usable object; `encode` gives the camelCase dict written by
    --write-config-to.
    """

    @classmethod
    def decode(cls: type[A], fields: Fields) -> A:
        raise NotImplementedError

    def encode(self) -> dict[str, Any]:
        raise NotImplementedError

    @staticmethod
    def resolve(kind: type[A] | None, value: object, plugin: str, problems: list[str]) -> A | None:
        """A plugin's args from its pluginConfig entry: an instance of `kind` as given, a mapping
        decoded (its problems added with their field paths), or `kind`'s defaults when absent.
        Anything else is a problem: never a silent default."""
        if kind is None:
            if value is not None:
                problems.append("takes no args")
            return None
        if isinstance(value, kind):
            return value
        if value is None:
            return kind.default()
        if isinstance(value, Mapping):
            errs = ErrorList()
            decoded = kind.decode(Fields(value, f"pluginConfig[{plugin}].args", errs))
            problems.extend(str(e) for e in errs)
            return decoded
        problems.append(f"args must be {kind.__name__} or a mapping, got {type(value).__name__}")
        return None

    @classmethod
    def default(cls: type[A]) -> A:
        errs = ErrorList()
        out = cls.decode(Fields({}, "", errs))
        if errs:  # pragma: no cover - a defaults bug, caught by tests
            raise AssertionError(f"{cls.__name__} defaults are invalid: {errs}")
        return out


# Covariant: a plugin's args are set once, by its constructor, so a plugin whose args are
# NodeAffinityArgs is an AnyPlugin (Plugin[PluginArgs | None]).
ArgsT = TypeVar("ArgsT", bound="PluginArgs | None", covariant=True)


class Plugin(Generic[ArgsT]):
    """Base of every plugin, generic in the type of its args.

    `class NodeAffinity(FilterPlugin[NodeAffinityArgs], ScorePlugin[NodeAffinityArgs])`
    types `self.args` as NodeAffinityArgs and sets `Args`, the class the runtime
    decodes the plugin's pluginConfig with; `[None]`: the plugin takes no args.
    Every base of one plugin names the same type (a class that does not is refused
    when it is defined).  The constructor is given the args the runtime decoded, or
    None when the plugin is not configured: `self.args` is then `Args`' defaults, as
    kube defaults an absent args block; args of another type are a PluginArgsError
    (the runtime refuses them before the constructor, naming the plugin).

    A class that names no type (the older `class X(ScorePlugin): Args = XArgs`) still
    works: `Args` as it sets it, `self.args` untyped for mypy.
    """

    name: ClassVar[str] = ""
    Args: ClassVar[type[PluginArgs] | None] = None
    args: ArgsT

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        named = _named_args_types(cls)
        if not named:
            return
        if len(named) > 1:
            listed = ", ".join(sorted(_type_name(t) for t in named))
            raise TypeError(
                f"plugin class {cls.__qualname__}: its bases name different args types ({listed})"
            )
        (kind,) = named
        given = cls.__dict__.get("Args", kind)
        if given is not kind:
            raise TypeError(
                f"plugin class {cls.__qualname__}: Args is {_type_name(given)} "
                f"but its bases name {_type_name(kind)}"
            )
        cls.Args = kind

    def __init__(self, args: ArgsT | None, handle: Handle) -> None:
        self.args = self._typed_args(args)
        self.handle = handle

    def _typed_args(self, args: object) -> ArgsT:
        kind = type(self).Args
        if kind is None:
            if args is not None:
                raise PluginArgsError(f"plugin {self.name!r} takes no args, got {type(args).__name__}")
            return cast(ArgsT, None)
        if args is None:
            return cast(ArgsT, kind.default())
        if not isinstance(args, kind):
            raise PluginArgsError(
                f"plugin {self.name!r} wants args of type {kind.__name__}, got {type(args).__name__}"
            )
        return cast(ArgsT, args)

    def events_to_register(self) -> Sequence[ClusterEventWithHint] | None:
        """The cluster events that may make a pod this plugin rejected schedulable (kube's
        EnqueueExtensions). None (the default): every event does, the safe choice; an empty
        list: none does, only the periodic flush of unschedulable leftovers retries the pod."""
        return None


def _named_args_types(cls: type) -> set[type[PluginArgs] | None]:
    """The args types `cls`'s own Plugin bases name (`FilterPlugin[XArgs]`); type variables
    (a generic intermediate class) name none."""
    out: set[type[PluginArgs] | None] = set()
    for base in cls.__dict__.get("__orig_bases__", ()):
        origin = get_origin(base)
        if not (isinstance(origin, type) and issubclass(origin, Plugin)):
            continue
        for arg in get_args(base):
            if isinstance(arg, TypeVar):
                continue
            if arg is type(None):
                out.add(None)
            elif isinstance(arg, type) and issubclass(arg, PluginArgs):
                out.add(arg)
            else:
                raise TypeError(
                    f"plugin class {cls.__qualname__}: {base} names {arg!r}, "
                    "not a PluginArgs subclass or None"
                )
    return out


def _type_name(kind: object) -> str:
    return "None" if kind is None else getattr(kind, "__name__", repr(kind))


# Whatever args a plugin takes; a plugin of any args type (`FilterPlugin[AnyArgs]`: any filter
# plugin), and its class, what a Registry holds.
AnyArgs: TypeAlias = PluginArgs | None
AnyPlugin: TypeAlias = Plugin[AnyArgs]
PluginFactory: TypeAlias = type[AnyPlugin]


# ---------------------------------------------------------------- queueing


class PreEnqueuePlugin(Plugin[ArgsT]):
    def pre_enqueue(self, pod: PodInfo) -> Status:
        """Success lets the pod into the active queue; anything else keeps it gated."""
        raise NotImplementedError


class QueueSortPlugin(Plugin[ArgsT]):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise NotImplementedError

    def sort_key(self, qp: QueuedPodInfo) -> Any | None:
        """Optional fast path: a key such that key(a) < key(b) iff less(a, b). None = use less()."""
        return None

    def sort_key_events(self) -> Sequence[ClusterEventWithHint]:
        """Cluster events that can change where a pod already in the active queue sorts, when the
        order reads more than the pod (an object the pod refers to: its group's creation time). On such an
        event each active pod whose hint answers QUEUE is sorted again. Default: none."""
        return ()


# ---------------------------------------------------------------- scheduling cycle


@dataclass(slots=True)
class PreFilterResult:
    """Nodes the pod may go to (None = all). Results of several plugins intersect."""

    node_names: set[str] | None = None


class PreFilterPlugin(Plugin[ArgsT]):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        raise NotImplementedError

    # PreFilterExtensions: keep cycle state right when preemption adds/removes pods.
    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status:
        return Status.success()

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status:
        return Status.success()


class FilterPlugin(Plugin[ArgsT]):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        raise NotImplementedError

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        """Batch form over snapshot rows `idx`; default calls filter() per node."""
        groups: dict[tuple[Code, tuple[str, ...]], BoolArray] = {}
        nodes = snapshot.nodes
        for j, i in enumerate(idx.tolist()):
            st = self.filter(state, pod, nodes[i])
            if st.ok:
                continue
            if st.code == Code.ERROR:
                raise PluginError(st.message() or "filter error", st.error)
            key = (st.code, tuple(st.reasons))
            m = groups.get(key)
            if m is None:
                m = groups[key] = np.zeros(len(idx), dtype=bool)
            m[j] = True
        return [Rejection(m, k[1], k[0]) for k, m in groups.items()]


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""
    # Pods evicted to make room (scheduler_preemption_victims); not part of equality.
    victims: int = field(default=0, compare=False)


class PostFilterPlugin(Plugin[ArgsT]):
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        raise NotImplementedError


class PreScorePlugin(Plugin[ArgsT]):
    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        raise NotImplementedError


class ScorePlugin(Plugin[ArgsT]):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise NotImplementedError

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        """Batch form: raw scores for snapshot rows `idx`; default calls score() per node."""
        nodes = snapshot.nodes
        return np.fromiter(
            (self.score(state, pod, nodes[i]) for i in idx.tolist()), dtype=np.int64, count=len(idx)
        )

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        """Rescale in place into [0, MAX_NODE_SCORE]; default leaves raw scores as they are."""
        return None


@dataclass(frozen=True, slots=True)
class PluginScores:
    """One score plugin's scores for the feasible nodes, for explanations."""

    raw: IntArray
    normalized: IntArray
    weighted: IntArray


class ReservePlugin(Plugin[ArgsT]):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Undo reserve(); must be idempotent and must not fail."""
        raise NotImplementedError

    def shared_reservation(self) -> object | None:
        """What reserve() / unreserve() record, when that is all they do and several plugins record
        it alike (the metric plugins reserving a pod with their shared source's estimator): of
        a profile's Reserve plugins naming the same object, only the first is called, at
        Reserve and Unreserve.  None (the default): this plugin is always called."""
        return None


class PermitPlugin(Plugin[ArgsT]):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        """(Success|Wait|rejection, timeout seconds for Wait)."""
        raise NotImplementedError


# ---------------------------------------------------------------- binding cycle


class PreBindPlugin(Plugin[ArgsT]):
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError


class BindPlugin(Plugin[ArgsT]):
    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Success when bound; Skip to let the next bind plugin try."""
        raise NotImplementedError


class PostBindPlugin(Plugin[ArgsT]):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


EXTENSION_POINTS: dict[str, PluginFactory] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}


def extension_points_of(cls: PluginFactory) -> list[str]:
    """The extension points a plugin class implements, in framework order."""
    return [ep for ep, base in EXTENSION_POINTS.items() if issubclass(cls, base)]
