"""API representations of problems, candidates, evaluations, reports and the leaderboard."""

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from court.models import Candidate, Claim, Curation, Evaluation, HackReport, Problem, Release
from court.models.internal_details import env_for, verdict_for
from court.validation import SourceError, validate_candidate, validate_problem, validate_proof_inputs


def json_type_refusal(field, value) -> str:
    """What `field` takes, when `value` is not of that JSON type ("" when it is, or is null: the
    field's allow_null decides that)."""
    if value is None:
        return ""
    if isinstance(field, (serializers.CharField, serializers.ChoiceField)) and not isinstance(value, str):
        return "a string"
    whole = isinstance(value, int) and not isinstance(value, bool)
    if isinstance(field, (serializers.IntegerField, serializers.PrimaryKeyRelatedField)) and not whole:
        return "a whole number"
    if isinstance(field, serializers.FloatField) and not (whole or isinstance(value, float)):
        return "a number"
    if isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
        return "true or false"
    return ""


class JsonTypes:
    """A JSON body's fields must be of the JSON types the schema gives them: DRF would turn 0 into
    "0" and "5" into 5, so a client sending the wrong type would never learn it. Form data, whose
    values are all strings, is converted as DRF does (the browsable API posts forms)."""

    def to_internal_value(self, data):
        if type(data) is dict:
            refused = {
                name: [f"Must be {what}, not {type(data[name]).__name__}."]
                for name, field in self.fields.items()
                if name in data and not field.read_only and (what := json_type_refusal(field, data[name]))
            }
            if refused:
                raise serializers.ValidationError(refused)
        return super().to_internal_value(data)


def _validated(validate, value: str) -> str:
    try:
        validate(value)
    except SourceError as exc:
        raise serializers.ValidationError(exc.problems) from None
    return value


class ProblemSerializer(JsonTypes, serializers.ModelSerializer):
    # A field named `label`, as the model's property is: DRF's Field has a `label` of its own.
    label = serializers.CharField(read_only=True)  # type: ignore[assignment]
    url = serializers.CharField(source="get_absolute_url", read_only=True)

    class Meta:
        model = Problem
        fields = [
            "id",
            "label",
            "title",
            "origin",
            "level",
            "task",
            "degenerate",
            "degenerate_reason",
            "source",
            "url",
            "created_at",
        ]
        read_only_fields = ["title", "origin", "level", "task", "degenerate", "degenerate_reason", "created_at"]

    def validate_source(self, value):
        return _validated(validate_problem, value)


class ClaimSerializer(serializers.ModelSerializer):
    class Meta:
        model = Claim
        fields = [
            "source",
            "arch",
            "speedup_eager",
            "speedup_compile",
            "speedup_compile_ro",
            "speedup_cudagraph",
            "speedup_cudnn",
        ]


class EvaluationSerializer(serializers.ModelSerializer):
    """An evaluation as the viewer may see it: the worker is never shown here (staff find it in the
    admin), and the environment and verdict hold the host's details for staff alone. `release` names
    the measured release it was imported from (null: run by a worker here)."""

    release: "serializers.SlugRelatedField[Release]" = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )

    class Meta:
        model = Evaluation
        fields = [
            "id",
            "candidate",
            "arch",
            "harness_version",
            "status",
            "stage",
            "reason",
            "precision_tier",
            "max_abs_error",
            "max_rel_error",
            "candidate_ms",
            "speedup_eager",
            "speedup_compile",
            "speedup_compile_ro",
            "speedup_cudagraph",
            "flags",
            "env",
            "verdict",
            "release",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def to_representation(self, evaluation):
        data = super().to_representation(evaluation)
        user = getattr(self.context.get("request"), "user", None)
        data["env"], data["verdict"] = env_for(user, evaluation), verdict_for(user, evaluation)
        return data


class CandidateSerializer(JsonTypes, serializers.ModelSerializer):
    problem = serializers.PrimaryKeyRelatedField(queryset=Problem.objects.public())
    claims = ClaimSerializer(many=True, read_only=True)
    evaluations = EvaluationSerializer(many=True, read_only=True)
    url = serializers.CharField(source="get_absolute_url", read_only=True)
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Candidate
        fields = [
            "id",
            "problem",
            "run",
            "round",
            "origin",
            "origin_label",
            "language",
            "kind",
            "code",
            "source_hash",
            "curation",
            "curation_reason",
            "created_at",
            "url",
            "download_url",
            "claims",
            "evaluations",
        ]
        read_only_fields = [
            "run",
            "round",
            "origin",
            "origin_label",
            "language",
            "kind",
            "source_hash",
            "curation",
            "curation_reason",
            "created_at",
        ]

    def get_download_url(self, candidate) -> str:
        return f"/kernels/{candidate.pk}/download.py"

    def validate_code(self, value):
        return _validated(validate_candidate, value)


class HackReportSerializer(JsonTypes, serializers.ModelSerializer):
    kernel = serializers.PrimaryKeyRelatedField(source="candidate", queryset=Candidate.objects.public())
    proof_checks = serializers.SerializerMethodField()

    class Meta:
        model = HackReport
        fields = [
            "id",
            "kernel",
            "category",
            "text",
            "proof_code",
            "status",
            "resolution",
            "created_at",
            "triaged_at",
            "proof_checks",
        ]
        read_only_fields = ["status", "resolution", "created_at", "triaged_at"]

    def get_proof_checks(self, report) -> list[dict]:
        return [{"arch": c.arch, "status": c.status, "reason": c.reason} for c in report.proof_checks.all()]

    def validate_proof_code(self, value):
        return _validated(validate_proof_inputs, value) if value.strip() else value


class TriageSerializer(JsonTypes, serializers.Serializer):
    status = serializers.ChoiceField(choices=["confirmed", "rejected", "duplicate"])
    resolution = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="Staff's own words; a confirmation needs one (here or already on the report): it is the public "
        "reason the kernel is delisted.",
    )
    duplicate_of = serializers.PrimaryKeyRelatedField(queryset=HackReport.objects.all(), required=False, allow_null=True)

    def validate(self, data):
        if data["status"] == "duplicate" and data.get("duplicate_of") is None:
            raise serializers.ValidationError({"duplicate_of": ["Name the report this one duplicates."]})
        return data


class CurationSerializer(JsonTypes, serializers.Serializer):
    state = serializers.ChoiceField(choices=Curation.values)
    reason = serializers.CharField(required=False, allow_blank=True, default="")

    def validate(self, data):
        if data["state"] == Curation.DELISTED and not data["reason"]:
            raise serializers.ValidationError(
                {"reason": ["Delisting shows its reason publicly: give the confirmed hack as the reason."]}
            )
        return data


# The request bodies above as the schema gives them: the rules their validate() adds, as variants.
class DecisionSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["confirmed", "rejected"])
    resolution = serializers.CharField(
        required=False, allow_blank=True, help_text="A confirmation needs one, here or already on the report."
    )


class DuplicateSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["duplicate"])
    duplicate_of = serializers.IntegerField(help_text="The report this one repeats.")
    resolution = serializers.CharField(required=False, allow_blank=True)


TRIAGE_REQUEST = PolymorphicProxySerializer(
    component_name="Triage",
    serializers={"confirmed": DecisionSerializer, "rejected": DecisionSerializer, "duplicate": DuplicateSerializer},
    resource_type_field_name="status",
)


KEPT = [state for state in Curation.values if state != Curation.DELISTED]


class KeepingSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=KEPT)
    reason = serializers.CharField(required=False, allow_blank=True, help_text="Shown beside the kernel.")


class DelistingSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=[Curation.DELISTED.value])
    reason = serializers.RegexField(r"\S", help_text="The confirmed hack: shown publicly as why the kernel left the board.")


# By the state asked for; typed as drf-spectacular takes it (a dict is invariant in its values).
CURATION_SERIALIZERS: dict[str, serializers.Serializer | type[serializers.Serializer]] = dict.fromkeys(KEPT, KeepingSerializer)
CURATION_SERIALIZERS[Curation.DELISTED.value] = DelistingSerializer
CURATION_REQUEST = PolymorphicProxySerializer(
    component_name="Curation",
    serializers=CURATION_SERIALIZERS,
    resource_type_field_name="state",
)


class LeaderboardRowSerializer(serializers.Serializer):
    """One problem's best kernel (court.leaderboard.BoardRow)."""

    problem = serializers.IntegerField()
    problem_label = serializers.CharField(source="label")
    title = serializers.CharField()
    level = serializers.IntegerField(allow_null=True)
    task = serializers.IntegerField(allow_null=True)
    kernel = serializers.IntegerField()
    evaluation = serializers.IntegerField()
    featured = serializers.BooleanField()
    speedup_eager = serializers.FloatField(source="values.eager", allow_null=True)
    speedup_compile = serializers.FloatField(source="values.compile", allow_null=True)
    speedup_compile_ro = serializers.FloatField(source="values.compile-ro", allow_null=True)
    speedup_cudagraph = serializers.FloatField(source="values.cudagraph", allow_null=True)
    speedup_intervals = serializers.DictField(
        source="intervals",
        child=serializers.ListField(child=serializers.FloatField(), allow_null=True),
        help_text="The 95% interval of each speedup, by baseline (null where none was measured)",
    )
    beats = serializers.SerializerMethodField(help_text="By baseline: faster beyond doubt (the whole interval above 1.01)")
    precision_tier = serializers.CharField()
    flags = serializers.ListField(child=serializers.CharField())
    origin = serializers.CharField()
    origin_label = serializers.CharField()
    kind = serializers.CharField(help_text="The kind of optimization, read from the code (static_analysis.KINDS)")
    finished_at = serializers.DateTimeField(source="finished", allow_null=True)

    def get_beats(self, row) -> dict[str, bool]:
        return {baseline: row.beats(baseline) for baseline in row.values}


class SummarySerializer(serializers.Serializer):
    level = serializers.CharField(allow_null=True)
    baseline = serializers.CharField()
    problems = serializers.IntegerField()
    verified = serializers.IntegerField()
    beats = serializers.IntegerField()
    mean = serializers.FloatField(allow_null=True)
    median = serializers.FloatField(allow_null=True)
    geomean = serializers.FloatField(allow_null=True)
    p25 = serializers.FloatField(allow_null=True)
    p75 = serializers.FloatField(allow_null=True)
    max = serializers.FloatField(allow_null=True)


class LeaderboardSerializer(serializers.Serializer):
    arch = serializers.CharField()
    harness_version = serializers.CharField()
    summary = SummarySerializer(many=True)
    rows = LeaderboardRowSerializer(many=True)
