"""DefaultBinder: bind the pod with a pods/binding call to the API server.

It runs on the binding pool, off the scheduling thread.  A failure is an
Error status (the runtime forgets the assumed pod and requeues it with
backoff).  One conflict is not a failure: if the API server says the pod is
already assigned to the very node we chose (our earlier request landed but
its reply was lost, and the retry hit 409), the pod is where we want it.
"""

from __future__ import annotations

from netsched.framework import BindPlugin, CycleState, PodInfo, Status, names

HTTP_CONFLICT = 409


def _http_status(err: BaseException) -> int | None:
    # netsched.kube errors carry `status`; raw API errors (fake server) carry `code`.
    for attr in ("status", "code"):
        v = getattr(err, attr, None)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def already_bound_to(err: BaseException, node_name: str) -> bool:
    """True for the API server's 409 'pod ... is already assigned to node "<node_name>"'."""
    if _http_status(err) != HTTP_CONFLICT:
        return False
    text = " ".join(str(x) for x in (err, getattr(err, "message", "")) if x)
    return f'already assigned to node "{node_name}"' in text


class DefaultBinder(BindPlugin[None]):
    name = names.DEFAULT_BINDER

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        try:
            self.handle.api.bind(pod, node_name)
        except Exception as e:  # any API failure fails this bind; the runtime requeues the pod
            if already_bound_to(e, node_name):
                return Status.success()
            return Status.as_error(e, plugin=self.name)
        return Status.success()
