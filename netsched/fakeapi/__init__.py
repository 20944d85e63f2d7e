"""An in-process fake Kubernetes API server (real HTTP, real watch semantics).

Not a test-only thing: `netsched demo` runs the real scheduler against it on a
machine without a cluster.  Tests reach it as netsched.testing.fakeapi.

    from netsched.fakeapi import FakeAPIServer
"""

from netsched.fakeapi.server import RESOURCES, ApiError, FakeAPIServer, Fault, RecordedRequest, ResourceType

__all__ = ["RESOURCES", "ApiError", "FakeAPIServer", "Fault", "RecordedRequest", "ResourceType"]
