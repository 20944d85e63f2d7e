"""The plugin contract: one base class per extension point, and the Handle.

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
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Protocol,
    TypeAlias,
    TypeVar,
    cast,
    get_args,
    get_origin,
)

import numpy as np
import numpy.typing as npt

from netsched.clock import Clock
from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.status import Code, Status
from netsched.framework.types import NodeInfo, PodInfo, QueuedPodInfo

if TYPE_CHECKING:
    from netsched.framework.snapshot import Snapshot
    from netsched.kube.resources import Resource

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

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


class PluginArgsError(TypeError):
    """A plugin was given args of the wrong type: a wiring bug, never silently defaulted."""


# ---------------------------------------------------------------- cluster events (queueing hints)


class ActionType(enum.IntFlag):
    """What happened to an object (kube's framework.ActionType, v1.31); events match on any common bit.

    A node update is split by what changed, so a plugin can ignore changes it never
    looks at: a heartbeat (only timestamps and status fields no plugin reads) carries
    no bit at all and moves no pod.  Spec.unschedulable changes count as
    UPDATE_NODE_TAINT, as upstream.
    """

    ADD = enum.auto()
    DELETE = enum.auto()
    UPDATE_NODE_ALLOCATABLE = enum.auto()
    UPDATE_NODE_LABEL = enum.auto()
    UPDATE_NODE_TAINT = enum.auto()
    UPDATE_NODE_CONDITION = enum.auto()
    UPDATE_NODE_ANNOTATION = enum.auto()
    UPDATE_POD_LABEL = enum.auto()
    UPDATE_POD_SCALE_DOWN = enum.auto()
    UPDATE_OTHER = enum.auto()  # an update of another kind of object (PDB, PVC, ...)
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_OTHER
    )
    ALL = ADD | DELETE | UPDATE


# Resources of ClusterEvent: NODE, ASSIGNED_POD (a pod bound to a node), METRICS_POLLED
# (new measurements in the shared metrics cache), the Kind of an OBJECT_KINDS entry
# ("PodDisruptionBudget", "PersistentVolumeClaim", ...), or WILDCARD.
NODE = "Node"
ASSIGNED_POD = "Pod"
METRICS_POLLED = "MetricsPolled"
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A change in the cluster that may make a rejected pod schedulable (kube's framework.ClusterEvent)."""

    resource: str
    action: ActionType
    label: str = ""  # for logs and the queue's metrics: "NodeAdd", "AssignedPodDelete", ...

    def match(self, event: ClusterEvent) -> bool:
        """A registered event (self) matches an event that happened."""
        if self.resource == WILDCARD and self.action == ActionType.ALL:
            return True
        return self.resource in (WILDCARD, event.resource) and bool(self.action & event.action)

    def __str__(self) -> str:
        return self.label or f"{self.resource}{self.action!r}"


# Any event at all: what a plugin without events_to_register() is registered for.
WILDCARD_EVENT = ClusterEvent(WILDCARD, ActionType.ALL, "WildCardEvent")
# The shared metrics poller brought new measurements (metrics-based plugins register it).
METRICS_POLLED_EVENT = ClusterEvent(METRICS_POLLED, ActionType.UPDATE_OTHER, "MetricsPolled")
# A pod left a node: deleted, or forgotten after its binding cycle failed (kube's EventAssignedPodDelete).
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")


class QueueingHint(enum.Enum):
    """A hint function's answer: the event may make the pod schedulable (QUEUE) or surely not (SKIP)."""

    QUEUE = "Queue"
    SKIP = "QueueSkip"


# hint(pod, old, new): pod is the parked pod; old/new the object before/after the event
# (NodeInfo for nodes, PodInfo for assigned pods, the raw mapping for other kinds; old is
# None on Add, new is None on Delete). An exception counts as QUEUE (logged).
QueueingHintFn = Callable[[PodInfo, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """One registration: the event, and optionally a finer test (no hint: always QUEUE)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


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
        order reads more than the pod (Coscheduling: the PodGroup's creation time). On such an
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


@dataclass(slots=True)
class Rejection:
    """Nodes (a mask over the batch) rejected by one filter for one reason set."""

    mask: BoolArray
    reasons: tuple[str, ...]
    code: Code = Code.UNSCHEDULABLE


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


class FrameworkBuildError(ValueError):
    """A profile that cannot schedule anything; raised at start-up."""


class PluginFault(Exception):
    """A plugin raised or returned Error; the pod is retried with backoff."""

    def __init__(self, status: Status) -> None:
        super().__init__(str(status))
        self.status = status


class PluginError(Exception):
    """A plugin fault; the runtime turns it into an Error status naming the plugin."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


# ---------------------------------------------------------------- diagnosis


@dataclass(slots=True)
class Diagnosis:
    """Why a pod fits nowhere: per-node codes plus the reason histogram kube prints.

    `node_codes[i]` is the Code of snapshot row i (SUCCESS for nodes not
    evaluated or feasible).  Preemption only considers rows whose code is
    UNSCHEDULABLE.
    """

    num_all_nodes: int
    node_codes: npt.NDArray[np.int8]
    reasons: dict[str, int] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def record(
        self, plugin: str, rows: IntArray, rejections: list[Rejection]
    ) -> tuple[BoolArray, Status | None]:
        """Count one filter's rejections of snapshot `rows`: (rejected mask, an Error status if
        the plugin reported one).  Each row keeps its most severe code."""
        failed = np.zeros(len(rows), dtype=bool)
        for rej in rejections:
            if rej.code == Code.ERROR:
                return failed, Status(Code.ERROR, list(rej.reasons), plugin)
            cnt = int(rej.mask.sum())
            if not cnt:
                continue
            failed |= rej.mask
            hit = rows[rej.mask]
            self.node_codes[hit] = np.maximum(self.node_codes[hit], int(rej.code))
            self._count(plugin, rej.reasons, cnt)
        return failed, None

    def record_node(self, row: int, st: Status) -> None:
        """One node's rejection by the per-node filters (nodes with nominated pods)."""
        self.node_codes[row] = int(st.code)
        self._count(st.plugin, st.reasons, 1)

    def _count(self, plugin: str, reasons: Iterable[str], nodes: int) -> None:
        for reason in reasons:
            self.reasons[reason] = self.reasons.get(reason, 0) + nodes
        self.unschedulable_plugins.add(plugin)

    def message(self) -> str:
        """kube's FitError text: each part is appended as " part." (so a preemption message
        that ends in "." gives kube's familiar double dot)."""
        out = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            out += f" {self.pre_filter_msg}."
        else:
            hist = sorted(f"{n} {r}" for r, n in self.reasons.items())
            if hist:
                out += f" {', '.join(hist)}."
        if self.post_filter_msg:
            out += f" {self.post_filter_msg}."
        return out


# ---------------------------------------------------------------- handle


class MetricsProvider(Protocol):
    """The process-wide measured-load cache (netsched.metrics.MetricsHub), shared by all profiles.

    A plugin asks it once, at construction, for the source serving its Prometheus
    connection args (netsched.metrics.source_for narrows the type); it never
    queries Prometheus itself.
    """

    def source(self, args: Any) -> object: ...


class _Observer(Protocol):
    def observe(self, amount: float) -> None: ...


class _Histogram(Protocol):
    def labels(self, *values: str) -> _Observer: ...


class _Counter(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class RuntimeMetrics(Protocol):
    """The scheduler's own metrics the runtime records (netsched.observability.SchedulerMetrics)."""

    @property
    def framework_extension_point_duration(self) -> _Histogram: ...

    @property
    def plugin_execution_duration(self) -> _Histogram: ...

    @property
    def preemption_attempts(self) -> _Counter: ...

    @property
    def preemption_victims(self) -> _Observer: ...


class WaitingPod(Protocol):
    @property
    def pod(self) -> PodInfo: ...

    @property
    def node_name(self) -> str: ...

    def pending_plugins(self) -> list[str]: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class EventRecorder(Protocol):
    def event(self, pod: PodInfo, type_: str, reason: str, action: str, message: str) -> None:
        """Record a Kubernetes Event about pod (type_ Normal|Warning). Never raises."""
        ...


class ClusterAPI(Protocol):
    """Everything the scheduler and its plugins may ask of the cluster: the one API seam.

    Implemented over the API server by netsched.kube.KubeAPI, in memory by
    netsched.inmemory.MemoryAPI (benchmarks, `netsched simulate`, tests), and
    by netsched.shadow.DryRunAPI, which records instead of writing (--dry-run).
    Writes raise netsched.kube.errors.ApiError subclasses.
    """

    @property
    def synchronous(self) -> bool:
        """True when a write is applied before the call returns and costs next to nothing (the
        in-memory cluster): callers may then write inline, keeping simulations deterministic,
        where they would otherwise write from a thread of their own."""
        ...

    def bind(self, pod: PodInfo, node_name: str) -> None:
        """Bind via pods/binding; Conflict when the pod is already bound."""
        ...

    def delete_pod(self, pod: PodInfo, grace_period_seconds: int | None = None) -> None:
        """Delete the pod (preemption); already gone, or replaced by a namesake, counts as done."""
        ...

    def set_nominated_node_name(self, pod: PodInfo, node_name: str) -> None:
        """Patch status.nominatedNodeName ("" clears it)."""
        ...

    def update_pod_condition(
        self, pod: PodInfo, condition: Mapping[str, Any], *, nominated_node_name: str | None = None
    ) -> None:
        """Set a pod condition (type PodScheduled unless `condition` says otherwise), in one
        write with status.nominatedNodeName when given; nothing is sent when the pod already
        carries the same condition and nomination."""
        ...

    def patch_pod_annotations(self, pod: PodInfo, annotations: Mapping[str, str | None]) -> None:
        """Merge-patch metadata.annotations; a None value removes that annotation."""
        ...

    def patch_object(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        subresource: str = "",
    ) -> Mapping[str, Any]:
        """JSON merge patch (RFC 7386) of one object of any kind, or of its `subresource`
        ("status"); returns the object as stored. A `metadata.resourceVersion` in the patch
        makes a stale write fail with netsched.kube.errors.Conflict, as kube's update does."""
        ...


class Handle(Protocol):
    """What a plugin can reach of the scheduler. The runtime implements it per profile."""

    @property
    def profile_name(self) -> str: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def parallelism(self) -> int: ...

    @property
    def api(self) -> ClusterAPI: ...

    @property
    def events(self) -> EventRecorder: ...

    @property
    def metrics(self) -> MetricsProvider | None:
        """The process-wide metrics hub (netsched.metrics), shared by all profiles."""
        ...

    @property
    def gangs(self) -> object | None:
        """The scheduler's gang manager (netsched.gangs.GangManager, reached with
        netsched.gangs.gangs_of), shared by all profiles; None when none was wired."""
        ...

    def filter_rows(
        self, pod: PodInfo, snapshot: Snapshot, rows: IntArray, *, skip: Collection[str] = ()
    ) -> tuple[IntArray, Diagnosis]:
        """The rows of `snapshot` where `pod` passes this profile's PreFilter and Filter plugins
        (those named in `skip` left out), and why the others do not: "what if" questions (a
        gang's placement decision) on a snapshot the caller may have changed. Nothing is reserved."""
        ...

    def snapshot(self) -> Snapshot:
        """The snapshot of the cycle in progress (stable for the whole cycle)."""
        ...

    def shutting_down(self, wait: float = 0.0) -> bool:
        """True once the scheduler is shutting down, waiting up to `wait` seconds (on the clock)
        for it: a plugin that waits in the binding cycle (PreBind) polls with this and gives
        up when it answers True (kube cancels the binding cycle's context)."""
        ...

    def iterate_waiting_pods(self) -> Iterator[WaitingPod]: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status: ...

    @property
    def objects(self) -> ObjectReader:
        """Watched objects of the kinds besides pods and nodes (PVCs, PodGroups, ...)."""
        ...

    def activate(self, pods: Iterable[PodInfo]) -> int:
        """Move these pending pods from backoff or unschedulable to the active queue now (kube's
        PodsToActivate: a gang member waiting at Permit wakes its siblings); how many moved."""
        ...

    def list_pods(self, namespace: str, where: Callable[[PodInfo], bool] | None = None) -> list[PodInfo]:
        """Pods of `namespace`: pending ones of this scheduler and assigned ones (bound or
        assumed: node_name set), filtered by `where` (kube's pod lister)."""
        ...

    def list_pdbs(self) -> list[Mapping[str, Any]]:
        """PodDisruptionBudgets as raw JSON (empty when none are watched)."""
        ...

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The namespace's labels, or None when it is unknown (namespaceSelector)."""
        ...


class ObjectReader(Protocol):
    """Raw objects of the watched kinds other than pods and nodes, by resource key
    ("namespaces", "policy/poddisruptionbudgets", "scheduling.x-k8s.io/podgroups":
    netsched.kube.resources.Resource.key). Served by netsched.cache.ObjectStore;
    a kind that is not watched (or not served by the cluster) reads as empty."""

    def list(self, key: str, namespace: str | None = None) -> list[Mapping[str, Any]]: ...

    def get(self, key: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def add_index(self, key: str, name: str, fn: Callable[[Mapping[str, Any]], Iterable[str]]) -> None:
        """Keep objects of `key` indexed by `fn` (idempotent per name; client-go's Indexer)."""

    def by_index(self, key: str, name: str, value: str) -> Sequence[Mapping[str, Any]]: ...


__all__ = [
    "MAX_NODE_SCORE",
    "AnyArgs",
    "AnyPlugin",
    "MIN_NODE_SCORE",
    "BindPlugin",
    "Clock",
    "ClusterAPI",
    "Diagnosis",
    "EventRecorder",
    "EXTENSION_POINTS",
    "FilterPlugin",
    "FrameworkBuildError",
    "Handle",
    "MetricsProvider",
    "ObjectReader",
    "PermitPlugin",
    "Plugin",
    "PluginArgs",
    "PluginArgsError",
    "PluginError",
    "PluginFactory",
    "PluginFault",
    "PluginScores",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "Rejection",
    "ReservePlugin",
    "RuntimeMetrics",
    "ScorePlugin",
    "WaitingPod",
    "extension_points_of",
]
