"""Whether user code runs in the OS sandbox here, in words a page can show.

Production never runs user code without it (settings.SANDBOX_REQUIRED, the worker refuses to start);
embedded mode may, and then every page that starts or shows a run says so.
"""

from django.conf import settings

from court.models.internal_details import shows_internal_details
from evaluation.harness.sandbox import confinement


def unconfined_warning(user=None) -> str | None:
    """None where bubblewrap confines user code on this host; otherwise what a visitor should know,
    and for staff why (the host's own error: court.models.internal_details)."""
    state = confinement()
    if state.confined:
        return None
    why = f" ({state.detail})" if shows_internal_details(user) else ""
    return f"This server runs pasted code and candidates without the OS sandbox{why}. " + (
        "It refuses to run them."
        if settings.SANDBOX_REQUIRED
        else "Only run code you trust here: embedded mode allows it, production never does."
    )


def unconfined_verdicts(evaluations) -> int:
    """How many of these evaluations' verdicts were measured without the OS sandbox."""
    return sum(1 for evaluation in evaluations if (evaluation.verdict or {}).get("sandbox", {}).get("confined") is False)
