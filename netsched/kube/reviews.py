"""TokenReview and SubjectAccessReview calls, for the delegated auth of the scheduler's endpoints.

netsched.observability.auth decides and caches; this module only creates the
review objects (raw JSON POSTs through KubeClient.request, like every other
request netsched makes), with a client built from --authentication-kubeconfig
/ --authorization-kubeconfig or, when those are empty, the in-cluster service
account (kube's delegating options).
"""

from __future__ import annotations

import logging

from netsched.kube.client import JsonObj, KubeClient
from netsched.kube.kubeconfig import client_for, in_cluster_configuration, load_configuration

log = logging.getLogger(__name__)

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
        return self.client.request("create", label, "POST", path, body=body, retry=False).body


def review_client(kubeconfig: str, flag: str, *, timeout: float = 10.0) -> KubeReviews | None:
    """A client from `kubeconfig`, else in-cluster; None (with a warning) when neither exists."""
    cfg = load_configuration(kubeconfig) if kubeconfig else in_cluster_configuration()
    if cfg is None:
        log.warning(
            "No kubeconfig and not in a cluster: every request to a protected path will be refused flag=%s",
            flag,
        )
        return None
    return KubeReviews(client_for(cfg, qps=20, burst=40, pool_size=4, timeout=timeout))
