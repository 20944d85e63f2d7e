"""A `kubectl` stand-in for the fake API server, so tests run deploy/README.md's steps as written.

No kubectl may be installed where the tests run, and a real one would need the
fake to serve discovery and OpenAPI. This does the few commands the tested
blocks of the docs use, with the requests kubectl makes for them, against the
cluster of $KUBECONFIG (netsched's own client):

- `kubectl apply -k DIR`: the objects netsched.testing.kustomize renders, each
  created, or replaced when it exists; an object of a kind the fake does not
  serve is an error (nothing the docs apply is silently skipped).
- `kubectl [-n NS] create token NAME`: a TokenRequest for that service account
  (POST .../serviceaccounts/NAME/token), the token printed as kubectl prints it.
- `kubectl [-n NS] port-forward ...`: nothing (a test serves netsched on the
  port the block names).

Anything else exits 1 saying so. Run it as `python -m netsched.testing.kubectl`
(tests put a `kubectl` script doing that first on PATH).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from netsched.fakeapi.resources import ResourceType, resource_of
from netsched.kube import Conflict, KubeClient, build_api_client
from netsched.testing.kustomize import Obj, load_kustomization


def kubectl(argv: Sequence[str]) -> int:
    args = list(argv)
    namespace = _take(args, "-n") or _take(args, "--namespace") or "default"
    client = build_api_client(os.environ.get("KUBECONFIG", ""), retry=None)
    try:
        if args[:1] == ["apply"] and len(args) == 3 and args[1] == "-k":
            for obj in load_kustomization(Path(args[2])):
                print(apply(client, obj))
            return 0
        if args[:2] == ["create", "token"] and len(args) == 3:
            print(create_token(client, namespace, args[2]))
            return 0
        if args[:1] == ["port-forward"]:
            return 0
    finally:
        client.close()
    print(f"kubectl stand-in (netsched.testing.kubectl): not supported: {' '.join(argv)}", file=sys.stderr)
    return 1


def apply(client: KubeClient, obj: Obj) -> str:
    """Create `obj`, or replace it when it exists; kubectl's line for it."""
    rt = resource_of(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
    if rt is None:
        raise SystemExit(
            f"kubectl stand-in: the fake API server does not serve {obj.get('apiVersion')} {obj.get('kind')}"
        )
    meta = obj["metadata"]
    collection = _path(rt, meta.get("namespace") or "default")
    try:
        client.request("create", rt.plural, "POST", collection, body=obj, retry=False)
        done = "created"
    except Conflict:
        current = client.request("get", rt.plural, "GET", f"{collection}/{quote(meta['name'])}").body
        replaced = {**obj, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}}
        client.request("update", rt.plural, "PUT", f"{collection}/{quote(meta['name'])}", body=replaced)
        done = "configured"
    return f"{rt.kind.lower()}/{meta['name']} {done}"


def create_token(client: KubeClient, namespace: str, account: str) -> str:
    path = f"{_path(_SERVICE_ACCOUNTS, namespace)}/{quote(account)}/token"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    reply = client.request("create", "serviceaccounts/token", "POST", path, body=body, retry=False)
    return str(reply.body["status"]["token"])


_SERVICE_ACCOUNTS = resource_of("v1", "ServiceAccount")
assert _SERVICE_ACCOUNTS is not None


def _path(rt: ResourceType | None, namespace: str) -> str:
    assert rt is not None
    base = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    return f"{base}/namespaces/{quote(namespace)}/{rt.plural}" if rt.namespaced else f"{base}/{rt.plural}"


def _take(args: list[str], flag: str) -> str:
    """The value of `flag` (removed from args with it), or ""."""
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
            del args[i : i + 2]
            return value
        if arg.startswith(flag + "="):
            del args[i]
            return arg.split("=", 1)[1]
    return ""


if __name__ == "__main__":  # pragma: no cover
    sys.exit(kubectl(sys.argv[1:]))
