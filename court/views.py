"""Pages: thin views over the selectors and services."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import get_template, render_to_string
from django.utils.module_loading import import_string

from court import claims_audit, leaderboard, older_harness, selectors, services, trust
from court.bundles import bundle, kernel_filename
from court.forms import HackReportForm
from court.models import Candidate, Problem
from court.models.internal_details import shown_to
from court.presentation import highlighted_diff, highlighted_python
from court.rate_limits import limit_posts
from court.run_links import held_runs
from evaluation.harness import HARNESS_VERSION


def _page(request, rows, filters, *, shown=list):
    """One page of `rows` (selectors.PAGE_SIZE), made ready by `shown`, with the query string its
    links keep."""
    page = Paginator(rows, selectors.PAGE_SIZE).get_page(request.GET.get("page"))
    links = page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1)
    return {"page": page, "page_links": links, "rows": shown(page.object_list), "filters": filters, "query": filters.query()}


def problem_list(request):
    filters = selectors.ProblemFilters.from_query(request.GET)
    page = _page(request, selectors.problem_rows(filters), filters, shown=selectors.with_counts)
    return render(request, "court/problem_list.html", {**page, "levels": selectors.problem_levels()})


def problem_detail(request, pk):
    problem = get_object_or_404(Problem.objects.visible_to(request.user, runs=held_runs(request.session)), pk=pk)
    return render(
        request,
        "court/problem_detail.html",
        {
            "problem": problem,
            # The demo starts from a problem it lists (its ?example=), with the module in its editor.
            "optimizable": Problem.objects.listed().filter(pk=problem.pk).exists(),
            "reference": highlighted_python(problem.source),
            "best": leaderboard.best_per_arch(problem),
            "candidates": selectors.listed_candidates_of(problem),
        },
    )


def problem_source(request, pk):
    problem = get_object_or_404(Problem.objects.visible_to(request.user, runs=held_runs(request.session)), pk=pk)
    return HttpResponse(problem.source.encode(), content_type="text/x-python; charset=utf-8")


def _visible_candidate(request, pk) -> Candidate:
    candidates = Candidate.objects.visible_to(request.user, runs=held_runs(request.session))
    return get_object_or_404(candidates.select_related("problem"), pk=pk)


# What a queued evaluation waits for is the job layer's to say (verification.waiting), which the domain
# may not import: it is looked up by name when a page asks, as the run page shows it.
WAITS_FOR = "verification.waiting.waits_for"


def _with_waits(evaluations: list) -> list:
    """Each queued evaluation with `.wait`: the sentence the run page shows beside "Queued"."""
    waits = import_string(WAITS_FOR)(evaluations)
    for evaluation in evaluations:
        evaluation.wait = waits[evaluation.pk].sentence() if evaluation.pk in waits else ""
    return evaluations


def candidate_detail(request, pk):
    candidate = _visible_candidate(request, pk)
    return render(
        request,
        "court/candidate_detail.html",
        {
            "candidate": candidate,
            "code": highlighted_python(candidate.code),
            "diff": highlighted_diff(candidate.problem.source, candidate.code),
            "evaluations": _with_waits(shown_to(request.user, selectors.evaluations_of(candidate))),
            "report_form": HackReportForm(),
        },
    )


def candidate_download(request, pk):
    candidate = _visible_candidate(request, pk)
    response = HttpResponse(candidate.code.encode(), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{kernel_filename(candidate)}"'
    return response


def candidate_bundle(request, pk):
    candidate = _visible_candidate(request, pk)
    data = bundle(candidate, page_url=request.build_absolute_uri(candidate.get_absolute_url()))
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{kernel_filename(candidate).removesuffix(".py")}.zip"'
    return response


@limit_posts("reports")
def report_hack(request, pk):
    candidate = _visible_candidate(request, pk)
    if not request.user.is_authenticated:
        messages.info(
            request,
            f"Log in (or sign up) to report a reward hack on kernel #{candidate.pk}: reports are signed, so staff "
            "can ask you about the proof, and you are credited when it holds.",
        )
        return redirect_to_login(request.get_full_path())
    form = HackReportForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.file_hack_report(candidate=candidate, reporter=request.user, **form.cleaned_data)
        messages.success(request, "Thank you: the report is filed, and staff will triage it.")
        return redirect(candidate)
    return render(request, "court/report_hack.html", {"candidate": candidate, "form": form})


def leaderboard_index(request):
    archs = leaderboard.leaderboard_archs()
    if archs:
        return redirect("kernels:leaderboard", arch=archs[0])
    return render(request, "court/leaderboard.html", {"archs": [], "arch": None})


def _measured_baselines(summary: list) -> dict:
    """The summary's rows of the baselines measured on this board, and the names of those never measured
    here (compile and CUDA graphs are not timed on a CPU): said once, not as rows of dashes."""
    measured = {s.baseline for s in summary if s.verified}
    unmeasured = list(dict.fromkeys(s.baseline for s in summary if s.baseline not in measured)) if measured else []
    return {"summary": [s for s in summary if s.baseline not in unmeasured], "unmeasured_baselines": unmeasured}


def _board_html(board: leaderboard.Board) -> dict:
    """What of the leaderboard's page depends on the board alone: each row and the summary, made
    once per change of the leaderboard (Board.kept), not on every request."""
    row = get_template("court/leaderboard_row.html")
    return {
        "rows": {r.kernel: row.render({"row": r}) for r in board.rows},
        "summary": render_to_string(
            "court/leaderboard_summary.html",
            {"arch": board.arch, "chart": board.chart, **_measured_baselines(board.summary)},
        ),
    }


def leaderboard_arch(request, arch):
    if not leaderboard.arch_exists(arch):
        raise Http404(f"No kernel has been evaluated on {arch!r}.")
    board = leaderboard.board(arch)
    html = board.kept("html", lambda: _board_html(board))
    filters = selectors.LeaderboardFilters.from_query(request.GET)
    page = _page(request, filters.apply(board.rows), filters)
    return render(
        request,
        "court/leaderboard.html",
        {
            **page,
            "row_html": [html["rows"][row.kernel] for row in page["rows"]],
            "summary_html": html["summary"],
            "archs": leaderboard.leaderboard_archs(),
            "arch": arch,
            "chart": board.chart,
            "choices": board.kept("choices", lambda: selectors.leaderboard_choices(board.rows)),
            "sorts": selectors.SORT_NAMES,
            "older_harness": {"marks": older_harness.marks(arch), "current": HARNESS_VERSION},
        },
    )


def leaderboard_compare(request, arch, other):
    for name in (arch, other):
        if not leaderboard.arch_exists(name):
            raise Http404(f"No kernel has been evaluated on {name!r}.")
    if arch == other:
        messages.info(
            request,
            f"A board compared with itself is the board: this is {arch}'s; choose another architecture to compare it with.",
        )
        return redirect("kernels:leaderboard", arch=arch)
    comparison = leaderboard.compare(arch, other)
    filters = selectors.ComparisonFilters.from_query(request.GET)
    page = _page(request, filters.apply(comparison.rows), filters)
    levels = sorted({row.problem.level for row in comparison.rows if row.problem.level is not None})
    return render(
        request,
        "court/leaderboard_compare.html",
        {
            **page,
            "comparison": comparison,
            "archs": leaderboard.leaderboard_archs(),
            "arch": arch,
            "other": other,
            "levels": levels,
        },
    )


def claims_audit_index(request, source):
    if not claims_audit.is_source(source):
        raise Http404(f"No claims by {source} are imported.")
    archs = claims_audit.audit_archs(source)
    if archs:
        return redirect("kernels:claims_audit", source=source, arch=archs[0])
    return render(request, "court/claims_audit.html", {"source": source, "archs": [], "arch": None})


def claims_audit_arch(request, source, arch):
    archs = claims_audit.audit_archs(source)
    if arch not in archs:
        raise Http404(f"No verdict of {source}'s entries on {arch}.")
    audit = claims_audit.audit(source, arch)
    show = request.GET.get("show")
    show = show if show in claims_audit.CATEGORIES or (show or "").startswith("check:") else None
    kind = request.GET.get("kind", "")[:16]
    return render(
        request,
        "court/claims_audit.html",
        {
            "source": source,
            "archs": archs,
            "arch": arch,
            "audit": audit,
            "summary": audit.summary,
            "rows": audit.shown(show, kind),
            "show": show,
            "kind": kind,
            "chart": audit.chart(),
            "flags_shown": audit.flag_meanings,
        },
    )


def trust_page(request):
    """The trust report: the hack families the harness defends, with the tests' last results."""
    report = trust.report(trust.read_results(settings.TRUST_RESULTS))
    return render(request, "court/trust.html", {"report": report, "harness_version": HARNESS_VERSION})
