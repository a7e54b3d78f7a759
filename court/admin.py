"""Admin for every model: staff curate problems and kernels and triage hack reports here."""

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html, format_html_join

from court import curation, leaderboard, older_harness
from court.models import (
    AuditEntry,
    Candidate,
    Claim,
    Curation,
    Evaluation,
    HackReport,
    OptimizationRun,
    Problem,
    ProofCheck,
    Release,
    RunEvent,
)
from court.presentation import highlighted_python
from court.selectors import outdated_kernels
from evaluation.harness import HARNESS_VERSION
from jobrows.admin import JobRowAdmin


def _pretty_json(value) -> str:
    # Styled by a class (css/admin.css): the Content Security Policy admits no style attributes.
    return format_html('<pre class="pretty-json">{}</pre>', json.dumps(value, indent=2, sort_keys=True))


class ChangesLeaderboard:
    """Staff's edits in a change form and deletions reach the leaderboard from the next request, as
    the curation services' changes do."""

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        leaderboard.changed()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        leaderboard.changed()

    def delete_queryset(self, request, queryset):
        super().delete_queryset(request, queryset)
        leaderboard.changed()


@admin.register(Problem)
class ProblemAdmin(ChangesLeaderboard, admin.ModelAdmin):
    list_display = ["id", "label", "title", "origin", "visibility", "degenerate", "created_at"]
    list_filter = ["origin", "level", "visibility", "degenerate", "counts_in_statistics"]
    search_fields = ["title", "source", "normalized_hash"]
    readonly_fields = ["normalized_hash", "created_at"]
    actions = [
        "promote",
        "make_listed",
        "make_featured",
        "make_hidden",
        "count_in_statistics",
        "keep_out_of_statistics",
        "reverify",
    ]

    @admin.display(description="Problem")
    def label(self, obj):
        return obj.label

    def _set_visibility(self, request, queryset, visibility):
        for problem in queryset:
            curation.set_problem_visibility(problem=problem, visibility=visibility, by=request.user)
        self.message_user(request, f"{queryset.count()} problems are now {visibility}.", messages.SUCCESS)

    @admin.action(description="Promote selected pastes to public problems (listed, on the leaderboard)", permissions=["change"])
    def promote(self, request, queryset):
        promoted = 0
        for problem in queryset:
            try:
                curation.promote_problem(problem=problem, by=request.user)
                promoted += 1
            except ValueError as exc:
                self.message_user(request, str(exc), messages.ERROR)
        if promoted:
            self.message_user(request, f"{promoted} pastes promoted to public problems.", messages.SUCCESS)

    @admin.action(description="List selected problems", permissions=["change"])
    def make_listed(self, request, queryset):
        self._set_visibility(request, queryset, Problem.Visibility.LISTED)

    @admin.action(description="Feature selected problems", permissions=["change"])
    def make_featured(self, request, queryset):
        self._set_visibility(request, queryset, Problem.Visibility.FEATURED)

    @admin.action(description="Hide selected problems", permissions=["change"])
    def make_hidden(self, request, queryset):
        self._set_visibility(request, queryset, Problem.Visibility.HIDDEN)

    @admin.action(description="Count in the summary statistics even if degenerate", permissions=["change"])
    def count_in_statistics(self, request, queryset):
        for problem in queryset:
            curation.set_problem_in_statistics(problem=problem, counted=True, by=request.user)

    @admin.action(description="Keep out of the summary statistics when degenerate (default)", permissions=["change"])
    def keep_out_of_statistics(self, request, queryset):
        for problem in queryset:
            curation.set_problem_in_statistics(problem=problem, counted=False, by=request.user)

    @admin.action(description="Re-verify every listed kernel of the selected problems", permissions=["change"])
    def reverify(self, request, queryset):
        candidates = Candidate.objects.listed().filter(problem__in=queryset)
        count = curation.request_reverification(candidates=candidates, by=request.user)
        self.message_user(request, f"{count} kernels sent for re-verification.", messages.SUCCESS)


class ClaimInline(admin.TabularInline):
    model = Claim
    extra = 0
    readonly_fields = ["created_at"]


class EvaluationInline(admin.TabularInline):
    model = Evaluation
    extra = 0
    fields = ("arch", "harness_version", "status", "reason", "speedup_eager", "speedup_compile", "finished_at")
    readonly_fields = fields
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class CurrentHarnessFilter(admin.SimpleListFilter):
    title = f"verdict of harness {HARNESS_VERSION}"
    parameter_name = "current_harness"

    def lookups(self, request, model_admin):
        return [("missing", "Missing (listed, verified under an older harness)")]

    def queryset(self, request, queryset):
        if self.value() != "missing":
            return queryset
        plan = outdated_kernels(candidates=queryset)
        return queryset.filter(pk__in=[kernel.pk for kernels in plan.values() for kernel in kernels])


@admin.register(Candidate)
class CandidateAdmin(ChangesLeaderboard, admin.ModelAdmin):
    list_display = ["id", "problem", "origin", "origin_label", "language", "curation", "created_at"]
    list_filter = ["curation", CurrentHarnessFilter, "origin", "origin_label", "language", "problem__level"]
    search_fields = ["code", "source_hash", "problem__title"]
    raw_id_fields = ["problem", "run", "submitted_by", "curated_by"]
    readonly_fields = ["source_hash", "created_at", "curated_by", "curated_at"]
    inlines = [ClaimInline, EvaluationInline]
    actions = [
        "make_listed",
        "make_featured",
        "make_hidden",
        "make_under_review",
        "delist_confirmed",
        "reverify",
        "reverify_outdated",
    ]

    def _curate(self, request, queryset, state, reason=""):
        for candidate in queryset:
            curation.curate_kernel(candidate=candidate, state=state, by=request.user, reason=reason)
        count = queryset.count()
        said = f"{count} candidates are" if count != 1 else "1 candidate is"
        self.message_user(request, f"{said} now {state}.", messages.SUCCESS)

    @admin.action(description="Re-verify selected kernels on every live architecture", permissions=["change"])
    def reverify(self, request, queryset):
        count = curation.request_reverification(candidates=queryset, by=request.user)
        self.message_user(request, f"{count} kernels sent for re-verification.", messages.SUCCESS)

    @admin.action(description="Re-verify selected kernels lacking a verdict of the current harness", permissions=["change"])
    def reverify_outdated(self, request, queryset):
        kernels = curation.request_outdated_reverification(candidates=queryset, by=request.user)
        if not kernels:
            self.message_user(request, f"Every selected listed kernel has a verdict of harness {HARNESS_VERSION}.", messages.INFO)
            return
        self.message_user(
            request,
            f"{len(kernels)} listed kernels sent for re-verification under harness {HARNESS_VERSION} on the live architectures.",
            messages.SUCCESS,
        )

    def get_urls(self):
        view = self.admin_site.admin_view(self.older_harness_view)
        return [path("older-harness/", view, name="kernels_candidate_older_harness"), *super().get_urls()]

    def older_harness_view(self, request):
        """Every listed kernel of an older harness sent for re-verification in one action (a POST), and
        how far that has come per architecture; the page reloads itself while verdicts are coming."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            kernels = curation.request_outdated_reverification(candidates=Candidate.objects.all(), by=request.user)
            self.message_user(
                request,
                f"{len(kernels)} listed kernels of an older harness sent for re-verification under harness {HARNESS_VERSION}."
                if kernels
                else f"No listed kernel lacks a verdict of harness {HARNESS_VERSION} that is not already on its way.",
                messages.SUCCESS if kernels else messages.INFO,
            )
            return redirect(request.path)
        progress = older_harness.progress()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Kernels of an older harness than {HARNESS_VERSION}",
            "harness_version": HARNESS_VERSION,
            "progress": progress,
            "coming": any(row.queued for row in progress),
        }
        return TemplateResponse(request, "admin/kernels/candidate/older_harness.html", context)

    @admin.action(description="List selected kernels", permissions=["change"])
    def make_listed(self, request, queryset):
        self._curate(request, queryset, Curation.LISTED)

    @admin.action(description="Feature selected kernels", permissions=["change"])
    def make_featured(self, request, queryset):
        self._curate(request, queryset, Curation.FEATURED)

    @admin.action(description="Hide selected kernels", permissions=["change"])
    def make_hidden(self, request, queryset):
        self._curate(request, queryset, Curation.HIDDEN)

    @admin.action(description="Put selected kernels under review", permissions=["change"])
    def make_under_review(self, request, queryset):
        self._curate(request, queryset, Curation.UNDER_REVIEW, reason="Under review after a hack report.")

    @admin.action(description="Delist selected kernels (needs a confirmed hack report)", permissions=["change"])
    def delist_confirmed(self, request, queryset):
        delisted = 0
        for candidate in queryset:
            confirmed = candidate.hack_reports.filter(status=HackReport.Status.CONFIRMED).exclude(resolution="")
            report = confirmed.order_by("-triaged_at").first()
            if report is None:
                self.message_user(
                    request,
                    f"{candidate} has no confirmed hack report with a resolution: confirm one first, its resolution "
                    "is the public reason (the reporter's text stays private).",
                    messages.ERROR,
                )
                continue
            curation.curate_kernel(candidate=candidate, state=Curation.DELISTED, by=request.user, reason=report.resolution)
            delisted += 1
        if delisted:
            self.message_user(request, f"{delisted} kernels delisted.", messages.SUCCESS)


@admin.register(Claim)
class ClaimAdmin(admin.ModelAdmin):
    list_display = ["candidate", "source", "arch", "speedup_eager", "speedup_compile", "speedup_cudagraph"]
    list_filter = ["source", "arch"]
    raw_id_fields = ["candidate"]


@admin.register(Evaluation)
class EvaluationAdmin(JobRowAdmin, ChangesLeaderboard, admin.ModelAdmin):
    list_display = ["id", "candidate", "arch", "status", "stage", "speedup_eager", "precision_tier", "finished_at"]
    list_filter = ["arch", "status", "harness_version", "precision_tier", "release"]
    search_fields = ["reason", "worker", "candidate__problem__title"]
    raw_id_fields = ["candidate"]
    readonly_fields = [
        "verdict_pretty",
        "env_pretty",
        "worker",
        "release",
        "error_detail",
        "created_at",
        "started_at",
        "finished_at",
    ]
    exclude = ["verdict", "env"]

    class Media:
        css = {"all": ["css/admin.css"]}

    @admin.display(description="Verdict")
    def verdict_pretty(self, obj):
        return _pretty_json(obj.verdict)

    @admin.display(description="Environment")
    def env_pretty(self, obj):
        return _pretty_json(obj.env)


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    """Releases are written by `manage.py import_release` from their files alone: nothing to edit here."""

    list_display = ["name", "arch", "harness_version", "measured_on", "measured_at", "entries", "imported_at"]
    list_filter = ["arch", "harness_version"]
    readonly_fields = [f.name for f in Release._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(OptimizationRun)
class OptimizationRunAdmin(JobRowAdmin, admin.ModelAdmin):
    list_display = ["id", "problem", "requester", "backend", "status", "rounds_completed", "max_rounds", "created_at"]
    list_filter = ["status", "backend"]
    raw_id_fields = ["problem", "requester"]
    readonly_fields = ["error_detail", "created_at", "started_at", "finished_at"]


class HackReportForm(forms.ModelForm):
    """A change of status is staff's decision: refused, with the reason, where curation refuses it (a
    proof still being checked, a confirmation without a public resolution...)."""

    class Meta:
        model = HackReport
        fields = "__all__"

    def clean(self):
        cleaned = super().clean()
        # Until _post_clean, the instance holds the report as stored.
        if self.instance.pk and "status" in self.changed_data:
            refusal = curation.decision_refusal(
                report=self.instance,
                status=cleaned.get("status"),
                resolution=cleaned.get("resolution") or "",
                duplicate_of=cleaned.get("duplicate_of"),
            )
            if refusal:
                raise forms.ValidationError(refusal)
        return cleaned


@admin.register(HackReport)
class HackReportAdmin(admin.ModelAdmin):
    form = HackReportForm
    list_display = ["id", "candidate", "category", "summary", "status", "proof", "reporter", "created_at", "triaged_by"]
    list_filter = ["status", "category"]
    search_fields = ["text", "resolution"]
    raw_id_fields = ["candidate", "evaluation", "reporter", "duplicate_of", "triaged_by"]
    readonly_fields = ["kernel_code", "kernel_flags", "proof_checks_shown", "created_at", "triaged_by", "triaged_at"]
    fieldsets = [
        ("The report", {"fields": ["candidate", "evaluation", "reporter", "category", "text", "proof_code", "created_at"]}),
        ("The kernel", {"fields": ["kernel_code", "kernel_flags"]}),
        ("Its proof, checked against the kernel", {"fields": ["proof_checks_shown"]}),
        ("Decision", {"fields": ["status", "resolution", "duplicate_of", "triaged_by", "triaged_at"]}),
    ]
    actions = ["confirm_and_delist", "reject"]

    class Media:
        css = {"all": ["css/admin.css", "css/highlight.css"]}

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("candidate__problem").prefetch_related("proof_checks")

    @admin.display(description="Report")
    def summary(self, obj):
        return obj.text if len(obj.text) <= 100 else obj.text[:99] + "…"

    @admin.display(description="Proof check")
    def proof(self, obj):
        checks = obj.proof_checks.all()
        return ", ".join(f"{check.arch}: {check.get_status_display()}" for check in checks) or "—"

    @admin.display(description="Code")
    def kernel_code(self, obj):
        return format_html('<div class="kernel-code">{}</div>', highlighted_python(obj.candidate.code))

    @admin.display(description="Verdicts and flags")
    def kernel_flags(self, obj):
        evaluations = obj.candidate.evaluations.order_by("arch", "-created_at")
        return (
            format_html_join(
                "",
                "<p>{} · harness {} · {}{}: {}</p>",
                (
                    (
                        e.arch,
                        e.harness_version,
                        e.get_status_display(),
                        f" at {e.speedup_eager:.2f}x" if e.speedup_eager is not None else "",
                        ", ".join(e.flags) if e.flags else "no flags",
                    )
                    for e in evaluations
                ),
            )
            or "Not evaluated yet."
        )

    @admin.display(description="Checks")
    def proof_checks_shown(self, obj):
        checks = obj.proof_checks.all()
        if not checks:
            return "No proof was given, or no architecture has verified the kernel to check it on."
        shown = format_html_join(
            "",
            "<p>{}: <strong>{}</strong>{}</p>",
            ((check.arch, check.get_status_display(), f". {check.reason}" if check.reason else "") for check in checks),
        )
        if pending := curation.pending_proof_checks(obj):
            note = f"Still being checked on {', '.join(pending)}: no decision can be taken until its verdict is in."
            return format_html('{}<p class="pending-proof">{}</p>', shown, note)
        return shown

    def save_model(self, request, obj, form, change):
        """A new status goes through curation.triage_report (audit log, delisting); the other fields are
        saved first, with the status as stored."""
        if not (change and "status" in form.changed_data):
            return super().save_model(request, obj, form, change)
        status, resolution, duplicate_of = obj.status, obj.resolution, obj.duplicate_of
        stored = HackReport.objects.get(pk=obj.pk)
        obj.status, obj.duplicate_of = stored.status, stored.duplicate_of
        super().save_model(request, obj, form, change)
        curation.triage_report(report=obj, status=status, by=request.user, resolution=resolution, duplicate_of=duplicate_of)

    def _triage(self, request, queryset, status: str) -> int:
        decided = 0
        for report in queryset:
            try:
                curation.triage_report(report=report, status=status, by=request.user)
                decided += 1
            except curation.DecisionRefused as exc:
                self.message_user(request, f"{report}: {exc}", messages.ERROR)
        return decided

    @admin.action(
        description="Confirm: delist the kernel, with the resolution written on the report as the public reason",
        permissions=["change"],
    )
    def confirm_and_delist(self, request, queryset):
        if confirmed := self._triage(request, queryset, HackReport.Status.CONFIRMED):
            self.message_user(request, f"{confirmed} reports confirmed and their kernels delisted.", messages.SUCCESS)

    @admin.action(description="Reject selected reports", permissions=["change"])
    def reject(self, request, queryset):
        if rejected := self._triage(request, queryset, HackReport.Status.REJECTED):
            self.message_user(request, f"{rejected} reports rejected.", messages.SUCCESS)


@admin.register(ProofCheck)
class ProofCheckAdmin(JobRowAdmin, admin.ModelAdmin):
    list_display = ["report", "arch", "status", "reason", "finished_at"]
    list_filter = ["status", "arch"]
    raw_id_fields = ["report"]
    readonly_fields = ["created_at", "finished_at"]


@admin.register(RunEvent)
class RunEventAdmin(admin.ModelAdmin):
    list_display = ["run", "seq", "round", "kind", "created_at"]
    list_filter = ["kind"]
    raw_id_fields = ["run"]


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Read-only: the log is written by the curation services, never edited."""

    list_display = ["created_at", "actor", "action", "target_type", "target_id", "detail"]
    list_filter = ["action", "target_type"]
    search_fields = ["detail", "actor__username"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
