"""The reconciler: a periodic pass that gives every unfinished run, pending Evaluation and proof check a job that
will finish it, or ends it with a reason a person can read (inference.runs, verification.reconciler).

Jobs are lost in ways no job can notice itself: a send after commit that failed, a broker restarted
without its messages, a worker killed while the database was away. `manage.py reconcile --every 60`
runs the pass in production (one process is enough; more are safe, each row is locked while it is
handled); embedded mode runs it in a thread of the web process.
"""

import logging
import threading

from django.db import OperationalError, close_old_connections

from inference.runs import reconcile_runs
from verification.reconciler import reconcile_evaluations, reconcile_proof_checks

logger = logging.getLogger(__name__)

EVERY_S = 60


def reconcile(*, now=None) -> dict[str, dict[int, str]]:
    """One pass; what it did, by kind and id."""
    return {
        "runs": reconcile_runs(now=now),
        "evaluations": reconcile_evaluations(now=now),
        "proof checks": reconcile_proof_checks(now=now),
    }


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
