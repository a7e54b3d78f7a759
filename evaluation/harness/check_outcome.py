"""What a check of checks.py returns: passed or failed, the detail the verdict shows, and (rarely) a
status of its own that overrides the check's."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    passed: bool
    detail: str
    status: str | None = None  # overrides the check's own status on failure


def ok(detail: str) -> Outcome:
    return Outcome(True, detail)


def fail(detail: str, status: str | None = None) -> Outcome:
    return Outcome(False, detail, status)
