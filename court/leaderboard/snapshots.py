"""What changes the leaderboard, and the snapshots that keep it.

The leaderboard is computed once per change, not per request: what the pages, the API and the
export read is a snapshot in the database (court.models.leaderboard) under the leaderboard's current
version, and every owner of a change the leaderboard may show calls `changed()`, which gives it a new
version in the same transaction: the change and the new version commit together. The snapshots live
in the database, not the cache, so a Redis outage costs nothing here. A snapshot older than MAX_AGE
is computed again, so a write that bypasses the owners (a shell, raw SQL) shows within that time.
"""

import logging
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from court.models import LeaderboardSnapshot, LeaderboardVersion

logger = logging.getLogger(__name__)
T = TypeVar("T")

# The backstop for writes made around the owners of changes (`changed`).
MAX_AGE = timedelta(minutes=10)


# Bumped with the shape of a snapshot's body (BoardRow's fields): a snapshot an older release of the
# code kept is never parsed as this one.
SHAPE = 3


def changed() -> None:
    """Something the leaderboard shows may have changed (a verdict, a curation, a problem's
    visibility or statistics): the leaderboard gets a new version in the caller's transaction, so
    the first read after it commits computes it again, and a change rolled back leaves the version
    as it was. Every owner of such a change calls this, last in its transaction (the version's row
    stays locked until the commit): verification.evaluations, court.curation, court.services'
    imports and the admin's edits."""
    token = uuid.uuid4().hex
    with transaction.atomic():
        LeaderboardVersion.objects.update_or_create(pk=1, defaults={"token": token})
        LeaderboardSnapshot.objects.exclude(version=token).delete()


def _current_version() -> str:
    version, _ = LeaderboardVersion.objects.get_or_create(pk=1, defaults={"token": uuid.uuid4().hex})
    return version.token


# What this process read last, by key: (version, computed_at, the value read from the body). A
# request that finds the version unchanged reads nothing more from the database (a board's JSON
# is 100 KB, an export's 2 MB at KernelBench's 250 problems).
_read: dict[str, tuple[str, datetime, Any]] = {}


def snapshot(key: str, compute: Callable[[], str], parse: Callable[[str], T]) -> T:
    """What `key` holds under the current version, parsed: kept by this process, else read from
    its snapshot, else computed and kept in one."""
    key = f"{SHAPE}:{key}"
    version, oldest = _current_version(), timezone.now() - MAX_AGE
    known = _read.get(key)
    if known is not None and known[0] == version and known[1] >= oldest:
        return known[2]
    kept = (
        LeaderboardSnapshot.objects.filter(version=version, key=key, computed_at__gte=oldest)
        .values_list("body", "computed_at")
        .first()
    )
    if kept is not None:
        body, computed_at = kept
    else:
        # The version was read before computing: a change that commits meanwhile leaves this
        # snapshot under the version it replaced, where nothing reads it again.
        body, computed_at = compute(), timezone.now()
        _keep(version, key, body)
    value = parse(body)
    _read[key] = (version, computed_at, value)
    return value


def _keep(version: str, key: str, body: str) -> None:
    try:
        with transaction.atomic():
            LeaderboardSnapshot.objects.filter(version=version, key=key).delete()
            LeaderboardSnapshot.objects.create(version=version, key=key, body=body)
    except IntegrityError:
        pass  # another request kept the same computation first
    except DatabaseError:
        logger.warning("could not keep the leaderboard's %s; it is computed again on the next request", key, exc_info=True)
