from django.urls import path
from rest_framework.routers import DefaultRouter

from kernels.api import views

router = DefaultRouter()
router.register("problems", views.ProblemViewSet, basename="problem")
router.register("candidates", views.CandidateViewSet, basename="candidate")
router.register("evaluations", views.EvaluationViewSet, basename="evaluation")
router.register("reports", views.HackReportViewSet, basename="report")

urlpatterns = [
    path("leaderboard/<slug:arch>/", views.leaderboard_view, name="api-leaderboard"),
    path("leaderboard/<slug:arch>/export.jsonl", views.leaderboard_export, name="api-leaderboard-export"),
    path("kernels/<int:pk>/download", views.kernel_download, name="api-kernel-download"),
    *router.urls,
]
