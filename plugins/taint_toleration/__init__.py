"""TaintToleration filter/pre-score/score plugin."""

from .plugin import TaintToleration

__all__ = ["TaintToleration"]
