"""Who may see what: the visibility rules, written once, for every page, socket, download, export
and API route.

The words, as everything here uses them:

- **public**: anyone may see it at its own URL (its page, download, bundle, API detail, socket).
  A problem is public when staff listed or featured it: KernelBench's are listed when imported,
  a pasted module is unlisted until staff promote it. A candidate is public unless staff hid it
  or its problem is not public (its page, diff and bundle show the problem). Kernels under review
  or delisted for a confirmed hack stay public, with their reason shown. An evaluation is public
  when its candidate is. A run is public when its problem is. Its transcript (prompts, the model's
  answers, the verdicts fed back) quotes the problem and every candidate: whoever sees the run sees
  it without the candidates hidden from them, each hidden one's traces replaced by a note that staff
  removed it (court.selectors.RunRedaction, the one place that redacts a run for its page, socket
  and API).
- **held**: a pasted module belongs to its runs. A run on an unlisted problem is seen by whoever
  holds its link (its key, remembered by the browser that opened it: court.run_links) and by the
  account that started it, hidden candidates redacted as above; so are its problem and its
  candidates (not hidden ones), the problem also by the account that pasted it. Nothing held is
  ever listed.
- **listed**: public and shown in lists: the problem list and a problem's kernels, the leaderboard,
  its statistics and export, the tabs, what a run shows as already known, and what fan-out
  catches up or re-verifies. A problem is listed when public (it has no state in between); a
  candidate when listed or featured and its problem is listed.
- **current**: an evaluation by the harness version that runs now; **verified**: one whose verdict
  is verified. The leaderboard is `Evaluation.objects.current().verified().listed()`.
- **staff** see everything at its URL (`visible_to`, `can_view`); lists stay what the public sees.

`visible_to(user, runs=...)` and `can_view(user, obj, runs=...)` take the runs whose links the
viewer holds (court.run_links.held_runs); without them, only what the account may see.
"""

from django.db import models
from django.db.models import Q

from evaluation.harness import HARNESS_VERSION
from evaluation.harness.verdict import VERIFIED


class Curation(models.TextChoices):
    LISTED = "listed", "Listed"
    FEATURED = "featured", "Featured"
    HIDDEN = "hidden", "Hidden"
    UNDER_REVIEW = "under_review", "Under review"
    DELISTED = "delisted", "Delisted for a confirmed hack"


class ProblemVisibility(models.TextChoices):
    LISTED = "listed", "Listed"
    FEATURED = "featured", "Featured"
    UNLISTED = "unlisted", "Unlisted (a paste, seen through its runs)"
    HIDDEN = "hidden", "Hidden"


PUBLIC_PROBLEM = (ProblemVisibility.LISTED, ProblemVisibility.FEATURED)
PUBLIC_CURATION = (Curation.LISTED, Curation.FEATURED, Curation.UNDER_REVIEW, Curation.DELISTED)
LISTED_CURATION = (Curation.LISTED, Curation.FEATURED)


# The rules as conditions on a model reached through `path` (e.g. "candidates__"), so a count
# across a relation says the same as the QuerySet methods below.
def public_problem_q(path: str = "") -> Q:
    return Q(**{f"{path}visibility__in": PUBLIC_PROBLEM})


def public_candidate_q(path: str = "") -> Q:
    return Q(**{f"{path}curation__in": PUBLIC_CURATION}) & public_problem_q(f"{path}problem__")


def listed_candidate_q(path: str = "") -> Q:
    return Q(**{f"{path}curation__in": LISTED_CURATION}) & public_problem_q(f"{path}problem__")


def current_verified_q(path: str = "") -> Q:
    return Q(**{f"{path}status": VERIFIED, f"{path}harness_version": HARNESS_VERSION})


def held_q(user, runs, *, run: str, problem: str, submitted: str | None = None) -> Q:
    """What a viewer holds of an unlisted paste: through `run` (a path to a run's pk, "" for the
    run itself), the runs whose links they hold or that their account started; with `submitted`,
    also what their account pasted. `problem` is the path to the problem."""
    held = Q(**{f"{run}pk__in" if run == "" else f"{run}__in": list(runs)}) if runs else Q(pk__in=[])
    if user is not None and user.is_authenticated:
        held |= Q(**{f"{run}requester" if run == "" else f"{run}__requester": user})
        if submitted is not None:
            held |= Q(**{submitted: user})
    return Q(**{f"{problem}visibility": ProblemVisibility.UNLISTED}) & held


class VisibilityQuerySet(models.QuerySet):
    def public(self):
        """What anyone may open at its URL: each model's QuerySet below says (the module's docstring)."""
        raise NotImplementedError(f"{type(self).__name__} must say what of it is public")

    def held(self, user, runs):
        """What `user`, holding the links of `runs`, may open beyond what is public."""
        return self.none()

    def visible_to(self, user, *, runs=()):
        """What `user` may open at its URL: everything for staff; for anyone else what is public and
        what they hold (the runs whose links they hold, `runs`, and what their account started)."""
        if user is not None and user.is_staff:
            return self.all()
        return self.public() | self.held(user, runs)


class ProblemQuerySet(VisibilityQuerySet):
    def public(self):
        return self.filter(public_problem_q())

    def listed(self):
        return self.public()

    def held(self, user, runs):
        return self.filter(
            pk__in=self.model.objects.filter(held_q(user, runs, run="runs", problem="", submitted="submitted_by")).values("pk")
        )


class CandidateQuerySet(VisibilityQuerySet):
    def public(self):
        return self.filter(public_candidate_q())

    def listed(self):
        return self.filter(listed_candidate_q())

    def held(self, user, runs):
        return self.filter(held_q(user, runs, run="run", problem="problem__")).exclude(curation=Curation.HIDDEN)


class EvaluationQuerySet(VisibilityQuerySet):
    def current(self):
        return self.filter(harness_version=HARNESS_VERSION)

    def verified(self):
        return self.filter(status=VERIFIED)

    def public(self):
        return self.filter(public_candidate_q("candidate__"))

    def listed(self):
        return self.filter(listed_candidate_q("candidate__"))

    def held(self, user, runs):
        return self.filter(held_q(user, runs, run="candidate__run", problem="candidate__problem__")).exclude(
            candidate__curation=Curation.HIDDEN
        )


class RunQuerySet(VisibilityQuerySet):
    def public(self):
        return self.filter(public_problem_q("problem__"))

    def held(self, user, runs):
        return self.filter(held_q(user, runs, run="", problem="problem__"))


# What someone who pastes a hidden problem's module reads: they hold its source, nothing more.
TAKEN_DOWN = "Staff have taken this module down: it cannot be shown or run here."


def taken_down(user, problem) -> bool:
    """Whether staff hid this module from `user`, who pasted its source: an unlisted paste is
    someone else's, not taken down, and pasting it again starts a run of one's own."""
    return problem.visibility == ProblemVisibility.HIDDEN and not (user is not None and user.is_staff)


def can_view(user, obj, *, runs=()) -> bool:
    """Whether `user` (holding the links of `runs`) may see `obj` (a problem, candidate, evaluation
    or run) at its URL: the same rule as the QuerySet methods, asked of the database so the two
    cannot drift apart."""
    return type(obj)._default_manager.visible_to(user, runs=runs).filter(pk=obj.pk).exists()
