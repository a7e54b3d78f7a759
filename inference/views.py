"""The demo: paste a module, start a run, and watch it stream."""

from django.contrib import messages
from django.http import Http404, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect, render

from inference import services
from inference.forms import RunForm
from kernels import selectors
from kernels.models import OptimizationRun, Problem
from kernels.models.internal_details import error_detail_for
from kernels.models.visibility import TAKEN_DOWN, taken_down
from kernels.rate_limits import limit_posts
from kernels.run_links import held_runs, hold_run, opens
from kernels.services import submit_problem
from verification.confinement import unconfined_verdicts, unconfined_warning


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
                if not created and problem.visibility != Problem.Visibility.UNLISTED:
                    messages.info(request, f"This module is {problem.label}; its verified kernels are listed below.")
                run = services.start_run(
                    problem=problem,
                    backend=form.cleaned_data["backend"],
                    requester=user,
                    session_key=_session_key(request),
                    max_rounds=form.cleaned_data["max_rounds"],
                )
                hold_run(request.session, run)  # its starter holds its link
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


def run_detail(request, pk):
    run = OptimizationRun.objects.filter(pk=pk).only("pk", "link_key").first()
    if run is not None and opens(run, request.GET.get("key", "")):
        hold_run(request.session, run)  # its kernels, problem and socket open for this browser too
    try:
        run = selectors.run_with_candidates(pk, user=request.user, runs=held_runs(request.session))
    except OptimizationRun.DoesNotExist:
        raise Http404("No such run.") from None
    evaluations = {candidate.pk: list(candidate.evaluations.all()) for candidate in run.candidates.all()}
    transcript = selectors.run_transcript(run.pk)
    for event in transcript:
        if event["kind"] == "candidate":
            event["evaluations"] = evaluations.get(event["data"].get("candidate"), [])
    return render(
        request,
        "inference/run.html",
        {
            "run": run,
            "error_detail": error_detail_for(request.user, run),
            "transcript": transcript,
            "known_kernels": selectors.verified_kernels_of(run.problem),
            "can_cancel": not run.is_finished
            and services.can_control(run, user=request.user, session_key=request.session.session_key or ""),
            "sandbox_warning": unconfined_warning(request.user),
            "unconfined_verdicts": unconfined_verdicts(e for found in evaluations.values() for e in found),
        },
    )


def run_cancel(request, pk):
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    run = get_object_or_404(OptimizationRun, pk=pk)
    if not services.can_control(run, user=request.user, session_key=request.session.session_key or ""):
        messages.error(request, "Only whoever started this run (or staff) can cancel it.")
    else:
        services.cancel_run(run=run)
        messages.info(request, "Cancelling: the run stops at its next step.")
    return redirect(run)
