"""TaintToleration filter/pre-score/score plugin."""

from plugins.taint_toleration.plugin import TaintToleration

__all__ = ["TaintToleration"]
