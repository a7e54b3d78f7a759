"""The public REST API: thin views that validate, call one service or selector, and serialize."""

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, permissions, routers, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.reverse import reverse

from court import curation, leaderboard, services, trust
from court.api import serializers
from court.api.schema import ErrorSerializer
from court.models import Candidate, Evaluation, HackReport, Problem
from court.models.visibility import TAKEN_DOWN, taken_down
from court.rate_limits import ScopedWrites
from evaluation.harness import HARNESS_VERSION


def created_or_found(serializer, found: str) -> dict:
    """A create that answers 200 with what exists when the same thing was submitted before."""
    return {201: serializer, 200: OpenApiResponse(serializer, description=found)}


class ApiRoot(routers.APIRootView):
    """Kernel Court's API: its resources, and where its schema, documentation and tokens are. A
    leaderboard is /api/leaderboard/<arch>/ (and its export.jsonl); the audit of a publisher's kernels
    /api/audit/<source>/<arch>/ (and its audit.csv)."""

    ELSEWHERE = {"token": "api-token", "schema": "api-schema", "docs": "api-docs"}

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response.data.update({name: reverse(url_name, request=request) for name, url_name in self.ELSEWHERE.items()})
        return response


class IsStaff(permissions.BasePermission):
    def has_permission(self, request, view):
        return bool(request.user and request.user.is_staff)


class ProblemViewSet(ScopedWrites, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """KernelBench and pasted problems. POST a module to add one (the same module twice is one problem)."""

    serializer_class = serializers.ProblemSerializer
    filterset_fields = ["level", "task", "origin", "degenerate"]
    ordering_fields = ["level", "task", "created_at"]
    throttle_scope = "submissions"

    def get_queryset(self):
        return Problem.objects.visible_to(self.request.user).order_by("level", "task", "id")

    @extend_schema(responses=created_or_found(serializers.ProblemSerializer, "This module was submitted before: its problem."))
    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        problem, created = services.submit_problem(source=serializer.validated_data["source"], submitted_by=request.user)
        if taken_down(request.user, problem):
            return Response({"detail": TAKEN_DOWN}, status=status.HTTP_403_FORBIDDEN)
        return Response(self.get_serializer(problem).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class CandidateViewSet(ScopedWrites, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Candidates and kernels. POST {problem, code} to submit one; it is evaluated on every live architecture."""

    serializer_class = serializers.CandidateSerializer
    filterset_fields = ["problem", "run", "origin", "origin_label", "language", "kind", "curation"]
    ordering_fields = ["created_at"]
    throttle_scope = "submissions"

    def get_queryset(self):
        return Candidate.objects.visible_to(self.request.user).select_related("problem").prefetch_related("claims", "evaluations")

    @extend_schema(
        responses=created_or_found(
            serializers.CandidateSerializer, "This code was submitted for this problem before: its candidate."
        )
    )
    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        candidate, created = services.submit_candidate(
            problem=serializer.validated_data["problem"], code=serializer.validated_data["code"], submitted_by=request.user
        )
        return Response(self.get_serializer(candidate).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(request=serializers.CURATION_REQUEST, responses=serializers.CandidateSerializer)
    @action(detail=True, methods=["post"], permission_classes=[IsStaff])
    def curate(self, request, pk=None):
        """Staff: list, feature, hide, put under review or delist (with a public reason) a kernel."""
        candidate = self.get_object()
        serializer = serializers.CurationSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            curation.curate_kernel(candidate=candidate, by=request.user, **serializer.validated_data)
        except ValueError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(self.get_serializer(candidate).data)

    @extend_schema(request=None, responses={202: OpenApiResponse(description="Re-verification enqueued")})
    @action(detail=True, methods=["post"], permission_classes=[IsStaff])
    def reverify(self, request, pk=None):
        """Staff: evaluate the kernel again on every live architecture under the current harness."""
        curation.request_reverification(candidates=[self.get_object()], by=request.user)
        return Response({"detail": "Re-verification enqueued."}, status=status.HTTP_202_ACCEPTED)


class EvaluationViewSet(viewsets.ReadOnlyModelViewSet):
    """Verdicts: one per candidate, architecture and harness version, with every measurement."""

    serializer_class = serializers.EvaluationSerializer
    filterset_fields = ["candidate", "arch", "status", "harness_version", "precision_tier"]
    ordering_fields = ["created_at", "speedup_eager", "speedup_compile"]

    def get_queryset(self):
        return Evaluation.objects.visible_to(self.request.user).order_by("-created_at")


class HackReportViewSet(ScopedWrites, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Reward-hack reports. Signed-in users file them and see their own; staff see and triage all."""

    serializer_class = serializers.HackReportSerializer
    queryset = HackReport.objects.none()
    permission_classes = [permissions.IsAuthenticated]
    filterset_fields = ["status", "category", "candidate"]
    throttle_scope = "reports"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return self.queryset
        reports = HackReport.objects.prefetch_related("proof_checks").order_by("-created_at")
        return reports if self.request.user.is_staff else reports.filter(reporter=self.request.user)

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = services.file_hack_report(
            candidate=data["candidate"],
            reporter=self.request.user,
            category=data["category"],
            text=data["text"],
            proof_code=data.get("proof_code", ""),
        )

    @extend_schema(
        request=serializers.TRIAGE_REQUEST,
        responses={
            200: serializers.HackReportSerializer,
            409: OpenApiResponse(
                ErrorSerializer,
                description="The report's state does not allow this decision now: already confirmed, its proof "
                "still being checked, or a confirmation with no resolution here or on the report.",
            ),
        },
    )
    @action(detail=True, methods=["post"], permission_classes=[IsStaff])
    def triage(self, request, pk=None):
        """Staff: confirm (delists the kernel), reject, or mark a duplicate."""
        report = self.get_object()
        serializer = serializers.TriageSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            curation.triage_report(report=report, by=request.user, **serializer.validated_data)
        except curation.DecisionRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(report).data)


ARCH = OpenApiParameter(
    "arch",
    str,
    OpenApiParameter.PATH,
    pattern=r"^[-a-zA-Z0-9_]+$",
    description="An architecture some worker has evaluated on: h100, a100, l40, cpu, ...",
)


def board_of(arch: str) -> str:
    if not leaderboard.arch_exists(arch):
        known = ", ".join(leaderboard.leaderboard_archs()) or "none yet"
        raise NotFound(f"No kernel has been evaluated on {arch!r}; architectures with a leaderboard: {known}.")
    return arch


@extend_schema(parameters=[ARCH], responses=serializers.LeaderboardSerializer)
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def leaderboard_view(request, arch: str):
    """The best verified kernel per problem on one architecture, and the summary statistics."""
    board = leaderboard.board(board_of(arch))
    data = {"arch": arch, "harness_version": HARNESS_VERSION, "summary": board.summary, "rows": board.rows}
    return Response(board.kept("api", lambda: serializers.LeaderboardSerializer(data).data))


@extend_schema(
    parameters=[ARCH],
    responses={(200, "application/jsonl"): OpenApiResponse(OpenApiTypes.STR, description="One JSON object per line")},
)
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def leaderboard_export(request, arch: str):
    """The leaderboard as JSONL in CUDA-L1's release shape, with our measured fields under `measured`."""
    body = leaderboard.export_body(board_of(arch), site_url=settings.SITE_URL)
    response = HttpResponse(body, content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="kernel-court-{arch}.jsonl"'
    return response


@extend_schema(
    responses={(200, "text/x-python"): OpenApiResponse(OpenApiTypes.STR, description="The kernel's code, byte for byte")}
)
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def kernel_download(request, pk: int):
    """A kernel's `.py` file."""
    candidate = get_object_or_404(Candidate.objects.visible_to(request.user), pk=pk)
    response = HttpResponse(candidate.code.encode(), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="kernel_{candidate.pk}.py"'
    return response


@extend_schema(responses=OpenApiResponse(OpenApiTypes.OBJECT, description="The trust report (court/trust.py)"))
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def trust_view(request):
    """Which reward-hack families the harness defends: per family the trick, the checks or flags that
    close it, the harness version since which it holds, and the tests that prove it with their last
    result as the test suite recorded it; what is out of scope; the current harness version."""
    return Response({"harness_version": HARNESS_VERSION, **trust.report(trust.read_results(settings.TRUST_RESULTS))})
