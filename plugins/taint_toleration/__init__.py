"""TaintToleration filter/pre-score/score plugin."""

from netsched.plugins.taint_toleration.plugin import TaintToleration

__all__ = ["TaintToleration"]
