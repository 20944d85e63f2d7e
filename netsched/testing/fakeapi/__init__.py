"""The fake Kubernetes API server, for tests: netsched.fakeapi under the kit's name.

from netsched.testing.fakeapi import FakeAPIServer
"""

from netsched.fakeapi import RESOURCES, FakeAPIServer, Fault, RecordedRequest, ResourceType, StatusError

__all__ = ["RESOURCES", "FakeAPIServer", "Fault", "RecordedRequest", "ResourceType", "StatusError"]
