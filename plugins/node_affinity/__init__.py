"""NodeAffinity pre-filter/filter/pre-score/score plugin."""

from netsched.plugins.node_affinity.args import NodeAffinityArgs
from netsched.plugins.node_affinity.plugin import NodeAffinity

__all__ = ["NodeAffinity", "NodeAffinityArgs"]
