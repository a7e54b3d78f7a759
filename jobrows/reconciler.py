"""The reconciler: a periodic pass that gives every pending job row a job that will finish it, or
ends it with a reason a person can read.

Jobs are lost in ways no job can notice itself: a send after commit that failed, a broker restarted
without its messages, a worker killed while the database was away. Each app registers how its kind
of row is repaired (`register`, from its AppConfig.ready: evaluations and proof checks in
verification.apps, runs in inference.apps); a pass runs them all. `manage.py reconcile --every 60`
runs the pass in production (one process is enough; more are safe, each row is locked while it is
handled); embedded mode runs it in a thread of the web process (config.embedded).
"""

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TypeVar

from django.db import OperationalError, close_old_connections, transaction
from django.db.models import Model, QuerySet

from jobrows import liveness

M = TypeVar("M", bound=Model)

logger = logging.getLogger(__name__)

EVERY_S = 60

# How each kind of row is repaired, by its name ("evaluations"): called with now=, it returns
# what it did, by id.
ReconcileKind = Callable[..., dict[int, str]]
_kinds: dict[str, ReconcileKind] = {}


def register(kind: str, reconcile_kind: ReconcileKind) -> None:
    """Reconcile `kind` in every pass with `reconcile_kind(now=...)`; registering a kind again replaces it."""
    _kinds[kind] = reconcile_kind


def kinds() -> list[str]:
    """The kinds of row a pass reconciles, in the order it does."""
    return list(_kinds)


def reconcile(*, now=None) -> dict[str, dict[int, str]]:
    """One pass; what it did, by kind and id."""
    return {kind: reconcile_kind(now=now) for kind, reconcile_kind in _kinds.items()}


def reconcile_forever(every_s: float = EVERY_S, *, stop: threading.Event | None = None) -> None:
    """A pass every `every_s` until `stop` is set; a failed pass (the database away) is logged and
    the next one tried."""
    stop = stop or threading.Event()
    while True:
        try:
            close_old_connections()
            reconcile()
        except OperationalError as error:  # the database is away: one line a second, not a traceback
            logger.error("the reconciler's pass failed, the database is unreachable (%s); trying again in %s s", error, every_s)
        except Exception:
            logger.exception("the reconciler's pass failed; trying again in %s s", every_s)
        if stop.wait(every_s):
            return


def grace() -> timedelta:
    """A row sent less than this long ago may not have reached the broker yet (sends go after the
    commit): as long as a silence that means a process is dead."""
    return liveness.silence()


def past_grace(rows: QuerySet, now: datetime) -> QuerySet:
    """The rows created, and last sent, longer than the grace ago."""
    since = now - grace()
    return rows.filter(created_at__lt=since).exclude(enqueued_at__gte=since)


def reconcile_each(rows: QuerySet[M], act: Callable[[M], str | None]) -> dict[int, str]:
    """`act` on each of `rows` in a transaction of its own, the row locked and read again (one
    another pass holds is skipped, one that left `rows` meanwhile too); what it did is logged and
    returned, by id."""
    done = {}
    for pk in rows.values_list("pk", flat=True):
        with transaction.atomic():
            row = rows.select_for_update(skip_locked=True).filter(pk=pk).first()
            if row is None:
                continue
            action = act(row)
            if action:
                done[pk] = action
                logger.warning("%s %s: %s", rows.model._meta.model_name, pk, action)
    return done
