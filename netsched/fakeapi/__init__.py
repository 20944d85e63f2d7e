"""An in-process fake Kubernetes API server (real HTTP, real watch semantics).

Not a test-only thing: `netsched demo` runs the real scheduler against it on a
machine without a cluster.  Tests reach it as netsched.testing.fakeapi.

    from netsched.fakeapi import FakeAPIServer
"""

from netsched.fakeapi.http_server import Fault, RecordedRequest
from netsched.fakeapi.resources import RESOURCES, ResourceType
from netsched.fakeapi.server import FakeAPIServer
from netsched.fakeapi.store import StatusError

__all__ = ["RESOURCES", "FakeAPIServer", "Fault", "RecordedRequest", "ResourceType", "StatusError"]
