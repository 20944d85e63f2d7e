"""The synthetic node_exporter, for tests: netsched.fakemetrics.exporter under the kit's name.

from netsched.testing.exporter import FakeNode, SyntheticExporter
"""

from netsched.fakemetrics.exporter import GIB, NOISE_RATE, VETH, FakeNode, SyntheticExporter, fake_nodes

__all__ = ["GIB", "NOISE_RATE", "VETH", "FakeNode", "SyntheticExporter", "fake_nodes"]
