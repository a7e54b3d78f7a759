"""The runs API: start a run, read it, cancel it. Its live stream is the WebSocket /ws/runs/<id>/."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from court.api.serializers import JsonTypes
from court.models import OptimizationRun, Problem
from court.rate_limits import ScopedWrites
from court.run_links import held_runs, opens
from court.selectors import RunRedaction
from inference import services
from inference.backends import available_backends


class VisibleProblemField(serializers.PrimaryKeyRelatedField):
    """A problem the caller may see: public, or a paste of theirs (court.models.visibility), never
    one staff hid."""

    def get_queryset(self):
        request = self.context.get("request")
        user = getattr(request, "user", None)
        runs = held_runs(getattr(request, "session", None))
        return Problem.objects.visible_to(user, runs=runs).exclude(visibility=Problem.Visibility.HIDDEN)


class RunSerializer(JsonTypes, serializers.ModelSerializer):
    problem = VisibleProblemField()
    max_rounds = serializers.IntegerField(min_value=1, max_value=20, default=2)
    backend = serializers.ChoiceField(choices=[], default="builtin", help_text="The model that proposes the kernels.")
    target_speedup = serializers.FloatField(
        min_value=0.01,
        required=False,
        allow_null=True,
        help_text="Stop once a kernel is verified at this speedup over eager or more, e.g. 1.5.",
    )
    url = serializers.CharField(source="get_absolute_url", read_only=True)
    stream = serializers.SerializerMethodField()
    candidates = serializers.SerializerMethodField()

    class Meta:
        model = OptimizationRun
        fields = [
            "id",
            "problem",
            "backend",
            "model_name",
            "status",
            "max_rounds",
            "rounds_completed",
            "target_speedup",
            "prompt_template",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "url",
            "stream",
            "candidates",
        ]
        read_only_fields = ["status", "rounds_completed", "prompt_template", "error", "created_at", "started_at", "finished_at"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["backend"].choices = available_backends()

    def get_stream(self, run) -> str:
        return f"/ws/runs/{run.pk}/"

    def get_candidates(self, run) -> list[int]:
        """The run's candidates the caller may see: none staff hid from them (court.selectors.RunRedaction)."""
        redaction = RunRedaction.of(run.pk, user=getattr(self.context.get("request"), "user", None))
        return [candidate.pk for candidate in run.candidates.all() if redaction.shows(candidate.pk)]


class RunViewSet(
    ScopedWrites, mixins.CreateModelMixin, mixins.RetrieveModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet
):
    """Optimization runs. Anyone may read a run on a public problem; a run on a paste opens with its
    link's key (`?key=`, as in its `url`). Signed-in users start runs and list their own."""

    serializer_class = RunSerializer
    filterset_fields = ["status", "backend", "problem"]
    throttle_scope = "runs"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return OptimizationRun.objects.none()
        held = held_runs(getattr(self.request, "session", None))
        key = self.request.query_params.get("key", "")
        if key and self.kwargs.get("pk", "").isdigit():
            run = OptimizationRun.objects.filter(pk=int(self.kwargs["pk"])).only("pk", "link_key").first()
            held += [run.pk] if run is not None and opens(run, key) else []
        runs = OptimizationRun.objects.visible_to(self.request.user, runs=held)
        runs = runs.select_related("problem").prefetch_related("candidates").order_by("-created_at")  # its url reads it
        if self.action == "list":
            if not self.request.user.is_authenticated:
                return runs.none()
            return runs if self.request.user.is_staff else runs.filter(requester=self.request.user)
        return runs

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            run = services.start_run(
                problem=data["problem"],
                backend=data.get("backend", "builtin"),
                model_name=data.get("model_name", ""),
                requester=request.user,
                max_rounds=data["max_rounds"],
                target_speedup=data.get("target_speedup"),
            )
        except services.RunError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(self.get_serializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=RunSerializer)
    @action(detail=True, methods=["post"], permission_classes=[permissions.IsAuthenticated])
    def cancel(self, request, pk=None):
        """The requester or staff: stop the run at its next step."""
        run = self.get_object()
        if not services.can_control(run, user=request.user):
            return Response(
                {"detail": "Only whoever started this run, or staff, can cancel it."}, status=status.HTTP_403_FORBIDDEN
            )
        return Response(self.get_serializer(services.cancel_run(run=run)).data)
