"""Run links: a run on a pasted module is seen by whoever holds its link (court.models.visibility,
"held"). The link carries the run's key; the browser that opens it, or starts the run, remembers the
run in its session, so the run's kernels, its problem and its socket open for it too.
"""

from django.utils.crypto import constant_time_compare

SESSION_KEY = "court_runs"
# The most runs a session remembers (the newest kept): a session is a cookie's worth of data.
KEPT = 200


def held_runs(session) -> list[int]:
    """The runs whose links this session holds."""
    if session is None:
        return []
    return [pk for pk in session.get(SESSION_KEY, []) if isinstance(pk, int)]


def hold_run(session, run) -> None:
    held = held_runs(session)
    if held[-1:] == [run.pk]:
        return  # already the newest: the session is not written again
    session[SESSION_KEY] = ([pk for pk in held if pk != run.pk] + [run.pk])[-KEPT:]


def opens(run, key: str) -> bool:
    """Whether `key` is the run's link key."""
    return bool(key) and bool(run.link_key) and constant_time_compare(key, run.link_key)
