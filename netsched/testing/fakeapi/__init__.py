"""The fake Kubernetes API server, for tests: netsched.fakeapi under the kit's name.

from netsched.testing.fakeapi import FakeAPIServer
"""

from netsched.fakeapi import RESOURCES, ApiError, FakeAPIServer, Fault, RecordedRequest, ResourceType

__all__ = ["RESOURCES", "ApiError", "FakeAPIServer", "Fault", "RecordedRequest", "ResourceType"]
