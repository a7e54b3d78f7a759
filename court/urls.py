from django.urls import path

from court import views

app_name = "kernels"

urlpatterns = [
    path("problems/", views.problem_list, name="problems"),
    path("problems/<int:pk>/", views.problem_detail, name="problem"),
    path("problems/<int:pk>/source.py", views.problem_source, name="problem_source"),
    path("kernels/<int:pk>/", views.candidate_detail, name="candidate"),
    path("kernels/<int:pk>/download.py", views.candidate_download, name="candidate_download"),
    path("kernels/<int:pk>/bundle.zip", views.candidate_bundle, name="candidate_bundle"),
    path("kernels/<int:pk>/report/", views.report_hack, name="report_hack"),
    path("leaderboard/", views.leaderboard_index, name="leaderboard_index"),
    path("leaderboard/<slug:arch>/", views.leaderboard_arch, name="leaderboard"),
    path("leaderboard/<slug:arch>/vs/<slug:other>/", views.leaderboard_compare, name="leaderboard_compare"),
    path("audit/<slug:source>/", views.claims_audit_index, name="claims_audit_index"),
    path("audit/<slug:source>/<slug:arch>/", views.claims_audit_arch, name="claims_audit"),
    path("trust/", views.trust_page, name="trust"),
]
