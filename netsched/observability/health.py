"""Named health checks and the /healthz and /livez answers, in kube's format.

The kubelet's liveness probe restarts a replica whose /livez fails, so an
answer must mean something: each check names one part of the process (the
leader elector, the scheduling loop, the informers) and says why it is
unhealthy. As k8s.io/apiserver's healthz handler: 200 "ok" when every check
passes; with ?verbose one line per check ("[+]ping ok") and "livez check
passed"; on a failure 500 with every check's line ("[-]leaderElection failed:
reason") and "livez check failed". kube withholds the reason from the body
("reason withheld") and logs it; ours is a scheduler's internal state, not a
secret, so the body says it (the operator's curl shows it) and it is logged.
?exclude=NAME skips a check, as kube's does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

# A check returns None when healthy, else the reason it is not.
CheckFn = Callable[[], "str | None"]


@dataclass(frozen=True, slots=True)
class Check:
    """One named health check (kube's HealthChecker: Name() and Check())."""

    name: str
    run: CheckFn


PING = Check("ping", lambda: None)


def evaluate(checks: Sequence[Check], exclude: Sequence[str] = ()) -> list[tuple[str, str | None, bool]]:
    """(name, reason or None, excluded) per check, in order; a check that raises fails with it."""
    results: list[tuple[str, str | None, bool]] = []
    for check in checks:
        if check.name in exclude:
            results.append((check.name, None, True))
            continue
        try:
            reason = check.run()
        except Exception as e:  # a broken check is a failed one, never a 200
            reason = f"check raised {type(e).__name__}: {e}"
        results.append((check.name, reason, False))
    return results


def answer(
    kind: str, checks: Sequence[Check], *, verbose: bool, exclude: Sequence[str] = ()
) -> tuple[int, str]:
    """(status, body) for /healthz or /livez (`kind`: "healthz" or "livez")."""
    results = evaluate(checks, exclude)
    lines = []
    failed = []
    for name, reason, excluded in results:
        if excluded:
            lines.append(f"[+]{name} excluded: ok")
        elif reason is None:
            lines.append(f"[+]{name} ok")
        else:
            lines.append(f"[-]{name} failed: {reason}")
            failed.append(f"{name}: {reason}")
    if failed:
        log.warning("Health check failed endpoint=/%s failed=%r", kind, "; ".join(failed))
        return 500, "\n".join(lines) + f"\n{kind} check failed\n"
    if not verbose:
        return 200, "ok\n"
    return 200, "\n".join(lines) + f"\n{kind} check passed\n"
