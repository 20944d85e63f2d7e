"""NodeAffinity pre-filter/filter/pre-score/score plugin."""

from .args import NodeAffinityArgs
from .plugin import NodeAffinity

__all__ = ["NodeAffinity", "NodeAffinityArgs"]
