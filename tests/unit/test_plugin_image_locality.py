"""ImageLocality: size x spread, clamped and scaled; canonical image names."""

from __future__ import annotations

import random

import numpy as np
import pytest

from netsched.framework.cycle_state import CycleState
from netsched.framework.parse import parse_pod
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import PodInfo
from netsched.plugins.image_locality import ImageLocality
from netsched.plugins.image_locality.plugin import image_aliases, normalized_image_name
from netsched.testing.agreement import score_outcomes
from netsched.testing.builders import NodeBuilder, make_node, make_pod, node_infos
from netsched.testing.framework import build_plugin

MB = 1024 * 1024


def setup(nodes: list[NodeBuilder]) -> tuple[ImageLocality, Snapshot]:
    snap = Snapshot.of(node_infos(list(nodes)))
    return build_plugin(ImageLocality, snapshot=snap), snap


def scores(pl: ImageLocality, pod: PodInfo, snap: Snapshot) -> list[int]:
    return score_outcomes(pl, pod, snap)


def cluster() -> list[NodeBuilder]:
    return [
        make_node("a").image("docker.io/library/nginx:latest", 500 * MB),
        make_node("b").image("nginx:latest", 500 * MB),
        make_node("c")
        .image("registry.example.com/big:v1", 2000 * MB)
        .image("docker.io/library/tiny:latest", 10 * MB),
        make_node("d"),
    ]


def test_single_container() -> None:
    pl, snap = setup(cluster())
    # nginx is on 2 of 4 nodes: 500MB * 0.5 = 250MB; 100 * (250 - 23) / (1000 - 23) = 23.2 -> 23.
    assert scores(pl, make_pod("p").image("nginx").info(), snap) == [23, 23, 0, 0]


def test_two_containers_raise_the_ceiling() -> None:
    pl, snap = setup(cluster())
    pod = make_pod("p").image("nginx").container("registry.example.com/big:v1").info()
    # Ceiling 2 x 1000MB. a, b: 250MB -> 100 * 227 / 1977 = 11.5 -> 11.
    # c: big is on 1 of 4 nodes: 2000MB * 0.25 = 500MB -> 100 * 477 / 1977 = 24.1 -> 24.
    assert scores(pl, pod, snap) == [11, 11, 24, 0]


def test_small_image_is_below_threshold() -> None:
    pl, snap = setup(cluster())
    # 10MB * 0.25 is under the 23MB floor.
    assert scores(pl, make_pod("p").image("tiny").info(), snap) == [0, 0, 0, 0]


def test_image_everywhere_counts_in_full() -> None:
    pl, snap = setup([make_node(n).image("app:v2", 1023 * MB) for n in "ab"])
    # Spread 1, 1023MB clamps to the 1000MB ceiling -> 100.
    assert scores(pl, make_pod("p").image("docker.io/library/app:v2").info(), snap) == [100, 100]


def test_init_containers_count() -> None:
    pl, snap = setup(cluster())
    pod_obj = make_pod("p").image("nginx").obj()
    pod_obj["spec"]["initContainers"] = [{"name": "i0", "image": "registry.example.com/big:v1"}]
    pod = parse_pod(pod_obj)
    assert scores(pl, pod, snap) == [11, 11, 24, 0]


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("nginx", "docker.io/library/nginx:latest"),
        ("nginx:1.25", "docker.io/library/nginx:1.25"),
        ("library/nginx", "docker.io/library/nginx:latest"),
        ("myorg/app", "docker.io/myorg/app:latest"),
        ("index.docker.io/library/nginx", "docker.io/library/nginx:latest"),
        ("localhost/app", "localhost/app:latest"),
        ("localhost:5000/app:dev", "localhost:5000/app:dev"),
        ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"),
        ("ghcr.io/org/img@sha256:abcd", "ghcr.io/org/img@sha256:abcd"),
        ("quay.io:443/org/img", "quay.io:443/org/img:latest"),
    ],
)
def test_normalized_image_name(name: str, want: str) -> None:
    assert normalized_image_name(name) == want


def test_batch_matches_per_node_on_random_clusters() -> None:
    rng = random.Random(2)
    images = ["nginx", "docker.io/library/redis:7", "quay.io/x/y:1", "app"]
    for k in range(40):
        nodes = []
        for i in range(rng.randint(1, 8)):
            nb = make_node(f"n{i}")
            for img in rng.sample(images, rng.randint(0, 3)):
                nb.image(img, rng.choice([5, 300, 900, 3000]) * MB)
            nodes.append(nb)
        pl, snap = setup(nodes)
        pb = make_pod(f"p{k}").image(rng.choice(images))
        for img in rng.sample(images, rng.randint(0, 2)):
            pb.container(img)
        pod = pb.info()
        idx = np.array(rng.sample(range(len(snap)), rng.randint(1, len(snap))), dtype=np.int64)
        assert pl.score_nodes(CycleState(), pod, snap, idx).tolist() == [
            pl.score(CycleState(), pod, snap.nodes[i]) for i in idx
        ]


RAW_NAMES = [
    "nginx",
    "nginx:latest",
    "nginx:1.25",
    "library/nginx",
    "docker.io/nginx",
    "docker.io/library/nginx:latest",
    "index.docker.io/library/nginx:1.25",
    "myorg/app",
    "docker.io/myorg/app:v1",
    "localhost/app",
    "localhost:5000/app:dev",
    "registry.k8s.io/pause:3.9",
    "ghcr.io/org/img@sha256:abcd",
    "nginx:1.25@sha256:abcd",
    "quay.io:443/org/img",
]


@pytest.mark.parametrize("raw", RAW_NAMES)
def test_aliases_cover_every_spelling(raw: str) -> None:
    canonical = normalized_image_name(raw)
    aliases = image_aliases(canonical)
    assert raw in aliases
    assert all(normalized_image_name(a) == canonical for a in aliases)


def test_short_and_qualified_names_match_both_ways() -> None:
    pl, snap = setup(
        [
            make_node("a").image("nginx", 500 * MB),
            make_node("b").image("docker.io/library/nginx:latest", 500 * MB),
        ]
    )
    # Whatever spelling the pod uses, both nodes hold the image: spread 1 -> 500MB -> 100*477/977 = 48.
    for name in ("nginx", "nginx:latest", "docker.io/library/nginx", "index.docker.io/library/nginx:latest"):
        assert scores(pl, make_pod(f"p-{len(name)}").image(name).info(), snap) == [48, 48]


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert ImageLocality.name == "ImageLocality"
    assert extension_points_of(ImageLocality) == ["score"]
