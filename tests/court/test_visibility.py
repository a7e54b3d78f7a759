"""The visibility words, each state by each state: public (seen at its URL), listed (shown in lists
and on the leaderboard), and staff seeing everything."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser

from court.models import Candidate, Evaluation, OptimizationRun, Problem
from court.models.visibility import can_view
from court.selectors import RunRedaction
from tests.court.factories import make_candidate, make_evaluation, make_problem

pytestmark = pytest.mark.django_db

CURATIONS = ["listed", "featured", "under_review", "delisted", "hidden"]


@pytest.fixture
def kernels():
    """One kernel per curation state on a listed problem, and a listed kernel on a hidden problem."""
    problem = make_problem(scale=2)
    by_state = {state: make_candidate(problem=problem, scale=10 + i, curation=state) for i, state in enumerate(CURATIONS)}
    by_state["of a hidden problem"] = make_candidate(scale=3, problem=make_problem(scale=3, visibility="hidden"))
    return by_state


def states(queryset, kernels) -> set[str]:
    """The names of `kernels` that `queryset` holds."""
    pks = set(queryset.values_list("pk", flat=True))
    return {name for name, kernel in kernels.items() if kernel.pk in pks}


def test_public_kernels_are_all_but_hidden_ones_and_those_of_hidden_problems(kernels):
    assert states(Candidate.objects.public(), kernels) == {"listed", "featured", "under_review", "delisted"}


def test_listed_kernels_are_listed_or_featured_on_a_listed_problem(kernels):
    assert states(Candidate.objects.listed(), kernels) == {"listed", "featured"}


def test_public_problems_are_listed_ones_and_listed_is_public(kernels):
    hidden = Problem.objects.get(visibility="hidden")
    assert hidden not in Problem.objects.public()
    assert list(Problem.objects.public()) == list(Problem.objects.listed())


def test_staff_see_every_kernel_and_others_the_public_ones(kernels):
    staff = get_user_model().objects.create_user("curator", is_staff=True)
    someone = get_user_model().objects.create_user("someone")
    public = states(Candidate.objects.public(), kernels)
    assert states(Candidate.objects.visible_to(staff), kernels) == set(kernels)
    assert states(Candidate.objects.visible_to(someone), kernels) == public
    assert states(Candidate.objects.visible_to(AnonymousUser()), kernels) == public
    assert can_view(staff, kernels["hidden"]) and not can_view(someone, kernels["hidden"])
    assert not can_view(AnonymousUser(), kernels["of a hidden problem"]) and can_view(someone, kernels["delisted"])


def test_the_leaderboard_is_current_verified_and_listed_evaluations(kernels):
    shown = make_evaluation(kernels["listed"])
    make_evaluation(kernels["listed"], harness_version="0-older")
    make_evaluation(kernels["featured"], status="incorrect")
    for state in ("under_review", "delisted", "hidden", "of a hidden problem"):
        make_evaluation(kernels[state])
    assert list(Evaluation.objects.current().verified().listed()) == [shown]
    assert Evaluation.objects.public().count() == 5  # both of the listed kernel, featured, under review, delisted


def test_a_run_is_public_while_its_problem_is_its_hidden_candidates_redacted(kernels):
    problem = make_problem(scale=5)
    clean, with_hidden = (OptimizationRun.objects.create(problem=problem) for _ in range(2))
    hidden = make_candidate(problem=problem, scale=50, run=with_hidden, origin="model", round=1, curation="hidden")
    make_candidate(problem=problem, scale=51, run=clean, origin="model", round=1, curation="delisted", curation_reason="x")
    on_hidden = OptimizationRun.objects.create(problem=Problem.objects.get(visibility="hidden"))
    assert set(OptimizationRun.objects.public()) == {clean, with_hidden}
    assert RunRedaction.of(with_hidden.pk, user=AnonymousUser()).removed == {hidden.pk: 1}
    assert set(OptimizationRun.objects.visible_to(get_user_model()(is_staff=True))) == {clean, with_hidden, on_hidden}


def test_a_paste_is_held_by_its_runs_link_and_its_accounts_never_listed():
    author, someone = (get_user_model().objects.create_user(name) for name in ("author", "someone"))
    paste = make_problem(scale=4, visibility="unlisted", submitted_by=author)
    run = OptimizationRun.objects.create(problem=paste, session_key="a visitor's")
    kernel = make_candidate(problem=paste, scale=4, run=run, origin="model", round=1)
    anyone = AnonymousUser()

    assert not can_view(anyone, paste) and not can_view(anyone, run) and not can_view(anyone, kernel)
    assert can_view(anyone, paste, runs=[run.pk]) and can_view(anyone, run, runs=[run.pk])
    assert can_view(anyone, kernel, runs=[run.pk])
    assert can_view(author, paste) and not can_view(author, kernel)  # the paste is theirs, the run is not
    assert not can_view(someone, paste)
    OptimizationRun.objects.filter(pk=run.pk).update(requester=someone)
    assert can_view(someone, kernel) and can_view(someone, run)
    assert paste not in Problem.objects.listed() and not Candidate.objects.listed().filter(problem=paste).exists()

    # A kernel staff hid is held by no one; its run still is, with that kernel redacted.
    hidden = make_candidate(problem=paste, scale=5, run=run, origin="model", round=2, curation="hidden")
    assert not can_view(anyone, hidden, runs=[run.pk]) and can_view(anyone, run, runs=[run.pk])
    assert RunRedaction.of(run.pk, user=anyone).removed == {hidden.pk: 2}
