"""ImageLocality: prefer nodes that already hold the pod's container images.

For each container image present on the node, its size is counted scaled by
its spread (the fraction of all nodes holding it), so an image on every node
does not make any node special and pods do not pile onto the one node that
happens to have a rare image.  The sum is clamped to
[23 MiB, 1000 MiB x number of containers] and mapped linearly onto 0..100
(kube's formula and thresholds; init containers count too).

Image names are compared in a canonical form: "nginx", "nginx:latest" and
"docker.io/library/nginx:latest" are one image (kube only appends ":latest",
so it misses the containerd-style names most nodes report).

Batch form: per snapshot layout, an index canonical image -> (rows, sizes) is
built lazily for the images pods ask about (probing each node's raw names with
every spelling of the image), and each pod's full score column is memoised by
its image list, so replicas cost one lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from netsched.framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    IntArray,
    NodeInfo,
    PodInfo,
    ScorePlugin,
    Snapshot,
    names,
)

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
DEFAULT_REGISTRY = "docker.io"
_MEMO_LIMIT = 1024


def normalized_image_name(name: str) -> str:
    """Docker-style canonical reference: registry/repo[:tag|@digest], ':latest' when neither."""
    ref = name.strip()
    slash = ref.find("/")
    first = ref[:slash] if slash >= 0 else ""
    if slash < 0 or ("." not in first and ":" not in first and first != "localhost"):
        domain, rest = DEFAULT_REGISTRY, ref
    else:
        domain, rest = first, ref[slash + 1 :]
    if domain == "index.docker.io":
        domain = DEFAULT_REGISTRY
    if domain == DEFAULT_REGISTRY and "/" not in rest:
        rest = "library/" + rest
    if "@" not in rest and ":" not in rest.rsplit("/", 1)[-1]:
        rest += ":latest"
    return f"{domain}/{rest}"


def image_aliases(canonical: str) -> tuple[str, ...]:
    """Every spelling that normalizes to `canonical` (what a node's status may list it as).

    Lets a lookup probe a node's raw image names directly instead of
    normalizing every name on every node.
    """
    domain, _, rest = canonical.partition("/")
    cut = min((i for i in (rest.find("@"), rest.rfind(":")) if i > rest.rfind("/")), default=len(rest))
    path, suffix = rest[:cut], rest[cut:]
    domains = ["", "docker.io/", "index.docker.io/"] if domain == DEFAULT_REGISTRY else [domain + "/"]
    paths = [path]
    if domain == DEFAULT_REGISTRY and path.startswith("library/") and path.count("/") == 1:
        paths.append(path[len("library/") :])
    suffixes = [suffix, ""] if suffix == ":latest" else [suffix]
    out = (d + p + x for d in domains for p in paths for x in suffixes)
    return tuple(a for a in out if normalized_image_name(a) == canonical)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = min(max(sum_scores, MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def scaled_image_score(size: int, num_nodes: int, total_nodes: int) -> int:
    # Same float64 operations as kube: int64(float64(size) * (float64(n) / float64(total))).
    return int(float(size) * (float(num_nodes) / float(total_nodes)))


def size_on(images: dict[str, int], aliases: tuple[str, ...]) -> int | None:
    for a in aliases:
        size = images.get(a)
        if size is not None:
            return size
    return None


@dataclass(slots=True)
class _ImageIndex:
    """Per-layout: where each canonical image is, and memoised per-pod score columns."""

    n: int
    where: dict[str, tuple[IntArray, IntArray]] = field(default_factory=dict)
    scores: dict[tuple[str, ...], IntArray] = field(default_factory=dict)


class ImageLocality(ScorePlugin[None]):
    name = names.IMAGE_LOCALITY

    def __init__(self, args: None, handle: Handle) -> None:
        super().__init__(args, handle)
        # Name memos shared by all snapshots (image names outlive layouts).
        self._canonical: dict[str, str] = {}
        self._aliases: dict[str, tuple[str, ...]] = {}

    def canonical(self, name: str) -> str:
        got = self._canonical.get(name)
        if got is None:
            if len(self._canonical) >= 16 * _MEMO_LIMIT:
                self._canonical.clear()
            got = self._canonical[name] = normalized_image_name(name)
        return got

    def aliases(self, canonical: str) -> tuple[str, ...]:
        got = self._aliases.get(canonical)
        if got is None:
            if len(self._aliases) >= 16 * _MEMO_LIMIT:
                self._aliases.clear()
            got = self._aliases[canonical] = image_aliases(canonical)
        return got

    def _index(self, snapshot: Snapshot) -> _ImageIndex:
        key = f"{names.IMAGE_LOCALITY}/index@{snapshot.layout_version}"
        got = snapshot.cache.get(key)
        if not isinstance(got, _ImageIndex):
            got = _ImageIndex(len(snapshot.nodes))
            snapshot.cache[key] = got
        return got

    def _where(self, snapshot: Snapshot, ix: _ImageIndex, image: str) -> tuple[IntArray, IntArray]:
        """Rows holding `image` and its size there; one pass over the nodes per image and layout."""
        got = ix.where.get(image)
        if got is None:
            aliases = self.aliases(image)
            rows: list[int] = []
            sizes: list[int] = []
            for i, node in enumerate(snapshot.nodes):
                if node.images and (size := size_on(node.images, aliases)) is not None:
                    rows.append(i)
                    sizes.append(size)
            got = ix.where[image] = (np.array(rows, dtype=np.int64), np.array(sizes, dtype=np.int64))
        return got

    def _pod_images(self, pod: PodInfo) -> tuple[str, ...]:
        return tuple(self.canonical(i) for i in pod.images)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        snapshot = self.handle.snapshot()
        if not pod.images or not snapshot.nodes:
            return 0
        ix = self._index(snapshot)
        total = 0
        for image in self._pod_images(pod):
            size = size_on(node.images, self.aliases(image))
            if size is not None:
                total += scaled_image_score(size, len(self._where(snapshot, ix, image)[0]), ix.n)
        return calculate_priority(total, len(pod.images))

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        if not pod.images or not snapshot.nodes:
            return np.zeros(len(idx), dtype=np.int64)
        ix = self._index(snapshot)
        images = self._pod_images(pod)
        column = ix.scores.get(images)
        if column is None:
            sums = np.zeros(ix.n, dtype=np.int64)
            for image in images:
                rows, sizes = self._where(snapshot, ix, image)
                if len(rows):
                    spread = float(len(rows)) / float(ix.n)
                    sums[rows] += (sizes.astype(np.float64) * spread).astype(np.int64)
            max_threshold = MAX_CONTAINER_THRESHOLD * len(images)
            clamped = np.clip(sums, MIN_THRESHOLD, max_threshold)
            column = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
            if len(ix.scores) >= _MEMO_LIMIT:
                ix.scores.clear()
            ix.scores[images] = column
        out: IntArray = column[idx]
        return out
