"""The audit of published kernels (court.claims_audit) as data: JSON, and CSV for a spreadsheet.
Claims and our measurements are separate objects (JSON) and separately prefixed columns (CSV)."""

import csv
import io

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from court import claims_audit
from court.api.views import ARCH
from evaluation.harness import HARNESS_VERSION

KIND = OpenApiParameter(
    "kind",
    str,
    OpenApiParameter.QUERY,
    required=False,
    description="Only entries of this kind of optimization: cuda, rewrite, ...",
)
SOURCE = OpenApiParameter(
    "source", str, OpenApiParameter.PATH, pattern=r"^[-a-zA-Z0-9_]+$", description="Who published the claims: cuda-l1"
)


def _audit(source: str, arch: str) -> claims_audit.Audit:
    archs = claims_audit.audit_archs(source)
    if arch not in archs:
        raise NotFound(f"No verdict of {source}'s entries on {arch}; audited there: {', '.join(archs) or 'nowhere yet'}.")
    return claims_audit.audit(source, arch)


@extend_schema(
    parameters=[SOURCE, ARCH, KIND],
    responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="The summary, the releases and a row per published entry")},
)
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def claims_audit_view(request, source: str, arch: str):
    """A publisher's kernels on one architecture: each claim beside our verdict and measures, and the summary."""
    audit = _audit(source, arch)
    return Response(
        {
            "source": source,
            "arch": arch,
            "harness_version": HARNESS_VERSION,
            "summary": claims_audit.summary_data(audit.summary),
            "releases": [claims_audit.release_data(release) for release in audit.releases],
            "rows": [
                claims_audit.row_data(row, site_url=settings.SITE_URL)
                for row in audit.shown(None, request.query_params.get("kind", ""))
            ],
        }
    )


@extend_schema(
    parameters=[SOURCE, ARCH],
    responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="One row per published entry")},
)
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def claims_audit_csv(request, source: str, arch: str):
    """The same rows as CSV: claims in claim_ columns, our figures in measured_ columns."""
    audit = _audit(source, arch)
    body = io.StringIO()
    writer = csv.writer(body)
    writer.writerow(claims_audit.CSV_COLUMNS)
    for row in audit.rows:
        writer.writerow(claims_audit.csv_row(claims_audit.row_data(row, site_url=settings.SITE_URL)))
    response = HttpResponse(body.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="audit-{source}-{arch}.csv"'
    return response
