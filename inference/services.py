"""Services for runs: start one, cancel one."""

from django.db import transaction
from django.utils import timezone

from court.models import OptimizationRun, Problem


class RunError(ValueError):
    """A run request that cannot be accepted; the message says what to change."""


def can_control(run: OptimizationRun, *, user=None, session_key: str = "", holds_link: bool = False) -> bool:
    """The requester (by account, or by browser session when anonymous), whoever holds the run's link
    (its key is the requester's secret: opened in another browser, it is still theirs) and staff
    control a run."""
    if holds_link:
        return True
    if user is not None and user.is_authenticated:
        return user.is_staff or run.requester_id == user.pk
    return bool(session_key) and run.requester_id is None and run.session_key == session_key


@transaction.atomic
def start_run(
    *,
    problem: Problem,
    backend: str,
    requester=None,
    session_key: str = "",
    max_rounds: int = 2,
    target_speedup: float | None = None,
    model_name: str = "",
) -> OptimizationRun:
    from inference.backends import available_backends
    from inference.runs import send

    if backend not in available_backends():
        raise RunError(f"Unknown backend {backend!r}: choose one of {', '.join(available_backends())}.")
    if not 1 <= max_rounds <= 20:
        raise RunError("Rounds must be between 1 and 20.")
    if target_speedup is not None and target_speedup <= 0:
        raise RunError("A target speedup must be positive, e.g. 1.5 for 50% faster than eager.")
    run = OptimizationRun.objects.create(
        problem=problem,
        backend=backend,
        model_name=model_name,
        requester=requester if requester is not None and requester.is_authenticated else None,
        session_key=session_key,
        max_rounds=max_rounds,
        target_speedup=target_speedup,
    )
    send(run)
    return run


def cancel_run(*, run: OptimizationRun) -> OptimizationRun:
    """Ask the run loop to stop; it stops at its next check (within a second or so)."""
    if not run.is_finished:
        OptimizationRun.objects.filter(pk=run.pk, cancel_requested_at=None).update(cancel_requested_at=timezone.now())
        run.refresh_from_db()
    return run
