"""Who may see what: the visibility rules, written once, for every page, socket, download, export
and API route.

The words, as everything here uses them:

- **public**: anyone may see it at its own URL (its page, download, bundle, API detail, socket).
  A problem is public unless staff hid it. A candidate is public unless staff hid it or hid its
  problem (its page, diff and bundle show the problem). Kernels under review or delisted for a
  confirmed hack stay public, with their reason shown. An evaluation is public when its candidate
  is. A run is public when its problem is and none of its candidates is hidden: its transcript
  (prompts, the model's answers, the verdicts fed back) quotes the problem and every candidate.
- **listed**: public and shown in lists: the problem list and a problem's kernels, the leaderboard,
  its statistics and export, the tabs, what a run shows as already known, and what fan-out
  catches up or re-verifies. A problem is listed when public (it has no state in between); a
  candidate when listed or featured and its problem is listed.
- **current**: an evaluation by the harness version that runs now; **verified**: one whose verdict
  is verified. The leaderboard is `Evaluation.objects.current().verified().listed()`.
- **staff** see everything at its URL (`visible_to`, `can_view`); lists stay what the public sees.
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


class VisibilityQuerySet(models.QuerySet):
    def public(self):
        """What anyone may open at its URL: each model's QuerySet below says (the module's docstring)."""
        raise NotImplementedError(f"{type(self).__name__} must say what of it is public")

    def visible_to(self, user):
        """What `user` may open at its URL: everything for staff, what is public for anyone else."""
        return self.all() if user is not None and user.is_staff else self.public()


class ProblemQuerySet(VisibilityQuerySet):
    def public(self):
        return self.filter(public_problem_q())

    def listed(self):
        return self.public()


class CandidateQuerySet(VisibilityQuerySet):
    def public(self):
        return self.filter(public_candidate_q())

    def listed(self):
        return self.filter(listed_candidate_q())


class EvaluationQuerySet(VisibilityQuerySet):
    def current(self):
        return self.filter(harness_version=HARNESS_VERSION)

    def verified(self):
        return self.filter(status=VERIFIED)

    def public(self):
        return self.filter(public_candidate_q("candidate__"))

    def listed(self):
        return self.filter(listed_candidate_q("candidate__"))


class RunQuerySet(VisibilityQuerySet):
    def public(self):
        return self.filter(public_problem_q("problem__")).exclude(candidates__curation=Curation.HIDDEN)


# What someone who pastes a hidden problem's module reads: they hold its source, nothing more.
TAKEN_DOWN = "Staff have taken this module down: it cannot be shown or run here."


def can_view(user, obj) -> bool:
    """Whether `user` may see `obj` (a problem, candidate, evaluation or run) at its URL: the same
    rule as the QuerySet methods, asked of the database so the two cannot drift apart."""
    return type(obj)._default_manager.visible_to(user).filter(pk=obj.pk).exists()
