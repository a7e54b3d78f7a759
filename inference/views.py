"""The demo: paste a module, start a run, and watch it stream."""

from django.contrib import messages
from django.http import Http404, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render

from court import selectors
from court.models import Evaluation, OptimizationRun, Problem
from court.models.internal_details import error_detail_for
from court.models.visibility import TAKEN_DOWN, taken_down
from court.rate_limits import limit_posts
from court.run_links import held_runs, hold_run, opens
from court.services import submit_problem
from inference import presentation, services
from inference.forms import RunForm
from inference.runs import queued_wait
from verification.confinement import unconfined_verdicts, unconfined_warning
from verification.waiting import waits_for


def _session_key(request) -> str:
    if not request.session.session_key:
        request.session.save()
    return request.session.session_key


# One budget with the API's run creation (inference.api), per user or address.
@limit_posts("runs")
def demo(request):
    from inference.backends import backend_choices

    backends = backend_choices()
    if request.method == "POST":
        form = RunForm(request.POST, backends=backends)
        if form.is_valid():
            user = request.user if request.user.is_authenticated else None
            problem, created = submit_problem(source=form.cleaned_data["source"], submitted_by=user)
            if taken_down(request.user, problem):
                form.add_error("source", TAKEN_DOWN)
            else:
                try:
                    run = services.start_run(
                        problem=problem,
                        backend=form.cleaned_data["backend"],
                        requester=user,
                        session_key=_session_key(request),
                        max_rounds=form.cleaned_data["max_rounds"],
                    )
                except services.RunError as error:
                    form.add_error(None, str(error))
                else:
                    hold_run(request.session, run)  # its starter holds its link
                    if not created and problem.visibility != Problem.Visibility.UNLISTED:
                        messages.info(request, _known_problem(problem))
                    return redirect(run)
    else:
        initial = {}
        example = request.GET.get("example", "")
        if example.isdigit():
            problem = Problem.objects.listed().filter(pk=int(example)).first()
            if problem is not None:
                initial["source"] = problem.source
        form = RunForm(initial=initial, backends=backends)
    return render(
        request,
        "inference/demo.html",
        {
            "form": form,
            "examples": selectors.listed_problems()
            .filter(origin=Problem.Origin.KERNELBENCH)
            .only("id", "level", "task", "title"),
            "problem_count": selectors.listed_problems().count(),
            "sandbox_warning": unconfined_warning(request.user),
        },
    )


def _known_problem(problem: Problem) -> str:
    """What the run page says of a module pasted before."""
    if selectors.verified_kernels_of(problem).exists():
        return f"This module is {problem.label}: kernels already verified for it are listed below."
    return f"This module is {problem.label}, known already; no kernel for it is verified yet."


def _visible_run(request, pk) -> OptimizationRun:
    """The run with its candidates where this browser may see it; a link with the run's key opens it
    (a paste's run included) and the session holds it from then on."""
    run = OptimizationRun.objects.filter(pk=pk).only("pk", "link_key").first()
    if run is not None and opens(run, request.GET.get("key", "")):
        hold_run(request.session, run)  # its kernels, problem and socket open for this browser too
    try:
        return selectors.run_with_candidates(pk, user=request.user, runs=held_runs(request.session))
    except OptimizationRun.DoesNotExist:
        raise Http404("No such run.") from None


def _controls(request, run: OptimizationRun) -> bool:
    return services.can_control(
        run,
        user=request.user,
        session_key=request.session.session_key or "",
        holds_link=run.pk in held_runs(request.session),
    )


def run_detail(request, pk):
    run = _visible_run(request, pk)
    redaction = selectors.RunRedaction.of(run.pk, user=request.user)
    shown = [candidate for candidate in run.candidates.all() if redaction.shows(candidate.pk)]
    evaluations = {candidate.pk: list(candidate.evaluations.all()) for candidate in shown}
    waits = waits_for(e for found in evaluations.values() for e in found)
    transcript = selectors.run_transcript(run.pk, redaction=redaction)
    blocks = presentation.transcript_blocks(transcript, evaluations, waits={pk: wait.sentence() for pk, wait in waits.items()})
    return render(
        request,
        "inference/run.html",
        {
            "run": run,
            "round": presentation.current_round(run, transcript),
            "error_detail": error_detail_for(request.user, run),
            "blocks": blocks,
            # Kernels found before this run; its own are in its transcript.
            "known_kernels": selectors.verified_kernels_of(run.problem).exclude(candidate__run=run),
            "can_cancel": not run.is_finished and _controls(request, run),
            "run_wait": queued_wait(run),
            "sandbox_warning": unconfined_warning(request.user),
            "unconfined_verdicts": unconfined_verdicts(e for found in evaluations.values() for e in found),
        },
    )


def run_waits(request, pk):
    """What each of the run's queued evaluations waits for, for the live page to show beside it, and
    what the run waits for while it is queued itself."""
    run = _visible_run(request, pk)
    queued = Evaluation.objects.filter(candidate__run=run, status=Evaluation.Status.QUEUED)
    hidden = selectors.RunRedaction.of(run.pk, user=request.user).removed
    waits = waits_for(queued.exclude(candidate__in=list(hidden)))
    return JsonResponse({"waits": {str(pk): wait.sentence() for pk, wait in waits.items()}, "run": queued_wait(run)})


def run_cancel(request, pk):
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    run = get_object_or_404(OptimizationRun, pk=pk)
    if not _controls(request, run):
        messages.error(request, "Only whoever started this run (or staff) can cancel it.")
    else:
        services.cancel_run(run=run)
        messages.info(request, "Cancelling: the run stops at its next step.")
    return redirect(run)
