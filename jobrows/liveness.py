"""How often a process says it is alive, and how long a silence means it is not.

Verification workers (verification.heartbeats) and run loops (inference.runs) beat every
`interval()`; one silent for `silence()` is taken for dead: fan-out stops sending to the worker,
and the reconciler sends its jobs again. The same span is the reconciler's grace for a row just
sent (its send goes after the commit). One setting, COURT_HEARTBEAT_S, scales all of it: production
keeps the default; the fault tests (tests/faults) run the whole platform at a tenth of it.
"""

from datetime import timedelta

from django.conf import settings

# Beats a process may miss (a busy database, a long garbage collection) before it counts as dead.
BEATS_BEFORE_DEAD = 6


def interval() -> timedelta:
    return timedelta(seconds=settings.LIVENESS_HEARTBEAT_S)


def silence() -> timedelta:
    return interval() * BEATS_BEFORE_DEAD
