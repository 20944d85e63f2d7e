"""NodeAffinity pre-filter/filter/pre-score/score plugin."""

from plugins.node_affinity.args import NodeAffinityArgs
from plugins.node_affinity.plugin import NodeAffinity

__all__ = ["NodeAffinity", "NodeAffinityArgs"]
