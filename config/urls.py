"""The site's URLs: pages, admin, API."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from inference.api import RunViewSet
from kernels.accounts import signup

runs = DefaultRouter()
runs.register("runs", RunViewSet, basename="run")

admin.site.site_header = "Kernel Court administration"
admin.site.site_title = "Kernel Court admin"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/signup/", signup, name="signup"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include(runs.urls)),
    path("api/", include("kernels.api.urls")),
    path("api/token/", obtain_auth_token, name="api-token"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("", include("inference.urls")),
    path("", include("kernels.urls")),
]
