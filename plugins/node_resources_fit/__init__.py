"""NodeResourcesFit pre-filter/filter/pre-score/score plugin."""

from netsched.plugins.node_resources_fit.args import NodeResourcesFitArgs
from netsched.plugins.node_resources_fit.plugin import NodeResourcesFit

__all__ = ["NodeResourcesFit", "NodeResourcesFitArgs"]
