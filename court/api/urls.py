from django.urls import path
from rest_framework.routers import DefaultRouter

from court.api import audit, views

# The API's one router (config/urls.py registers the runs on it too), so that its root lists them all.
router = DefaultRouter()
router.APIRootView = views.ApiRoot
router.register("problems", views.ProblemViewSet, basename="problem")
router.register("candidates", views.CandidateViewSet, basename="candidate")
router.register("evaluations", views.EvaluationViewSet, basename="evaluation")
router.register("reports", views.HackReportViewSet, basename="report")

urlpatterns = [
    path("leaderboard/<slug:arch>/", views.leaderboard_view, name="api-leaderboard"),
    path("leaderboard/<slug:arch>/export.jsonl", views.leaderboard_export, name="api-leaderboard-export"),
    path("kernels/<int:pk>/download", views.kernel_download, name="api-kernel-download"),
    path("audit/<slug:source>/<slug:arch>/", audit.claims_audit_view, name="api-claims-audit"),
    path("audit/<slug:source>/<slug:arch>/audit.csv", audit.claims_audit_csv, name="api-claims-audit-csv"),
    path("trust/", views.trust_view, name="api-trust"),
]
