"""Fluent builders for tests (MakePod().Name("p").Req(cpu="500m")): netsched.objects, re-exported.

pod = make_pod("web-1").req(cpu="500m", memory="1Gi").label("app", "web").info()
node = make_node("n1").capacity(cpu="4", memory="8Gi").taint("gpu", "true").info()
"""

from __future__ import annotations

from netsched.objects import NodeBuilder, PodBuilder, make_node, make_pod, node_infos

__all__ = ["NodeBuilder", "PodBuilder", "make_node", "make_pod", "node_infos"]
