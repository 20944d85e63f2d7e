"""TokenReview and SubjectAccessReview calls, for the delegated auth of the scheduler's endpoints.

netsched.observability.auth decides and caches; this module only creates the
review objects (raw JSON POSTs, like the rest of netsched.kube), with a client
built from --authentication-kubeconfig / --authorization-kubeconfig or, when
those are empty, the in-cluster service account (kube's delegating options).
"""

from __future__ import annotations

import logging
from typing import Any

from kubernetes.client.exceptions import ApiException

from netsched.kube.client import KubeClient, build_api_client

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


class KubeReviews:
    """ReviewClient over a KubeClient (its own rate budget: scrapes must not eat the binder's)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def create_token_review(self, body: JsonObj) -> JsonObj:
        return self._create(TOKEN_REVIEWS, "tokenreviews", body)

    def create_subject_access_review(self, body: JsonObj) -> JsonObj:
        return self._create(SUBJECT_ACCESS_REVIEWS, "subjectaccessreviews", body)

    def _create(self, path: str, label: str, body: JsonObj) -> JsonObj:
        api_client = self.client.api_client

        def send(_request_timeout: Any, _preload_content: bool) -> Any:
            request = api_client.param_serialize(
                "POST",
                path,
                header_params={"Accept": "application/json", "Content-Type": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
            )
            resp = api_client.call_api(*request, _request_timeout=_request_timeout)
            if not 200 <= resp.status <= 299:
                resp.read()
                raise ApiException.from_response(http_resp=resp, body=None, data=None)
            return resp.response

        return self.client.call_json("create", label, send, retry=False)


def review_client(kubeconfig: str, flag: str, *, timeout: float = 10.0) -> KubeReviews | None:
    """A client from `kubeconfig`, else in-cluster; None (with a warning) when neither exists."""
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import load_incluster_config

    if kubeconfig:
        return KubeReviews(build_api_client(kubeconfig, qps=20, burst=40, pool_size=4, timeout=timeout))
    try:
        import kubernetes.client as k8s

        cfg = k8s.Configuration()
        load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    except ConfigException:
        log.warning(
            "No kubeconfig and not in a cluster: every request to a protected path will be refused flag=%s",
            flag,
        )
        return None
    cfg.connection_pool_maxsize = 4
    cfg.retries = False
    from netsched.kube.ratelimit import TokenBucket

    return KubeReviews(KubeClient(k8s.ApiClient(cfg), limiter=TokenBucket(20, 40), timeout=timeout))
