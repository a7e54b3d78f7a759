"""The site's URLs: pages, admin, API."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from inference.api import RunViewSet
from kernels.accounts import TokenView, admin_login, login_page, password_reset, signup

runs = DefaultRouter()
runs.register("runs", RunViewSet, basename="run")

admin.site.site_header = "Kernel Court administration"
admin.site.site_title = "Kernel Court admin"

urlpatterns = [
    # The admin's log-in and Django's own account forms, rate limited; the rest of each as it comes.
    path("admin/login/", admin_login),
    path("admin/", admin.site.urls),
    path("accounts/signup/", signup, name="signup"),
    path("accounts/login/", login_page, name="login"),
    path("accounts/password_reset/", password_reset, name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include(runs.urls)),
    path("api/", include("kernels.api.urls")),
    path("api/token/", TokenView.as_view(), name="api-token"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("", include("inference.urls")),
    path("", include("kernels.urls")),
]
