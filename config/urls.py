"""The site's URLs: pages, admin, API."""

from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_replace, csp_update
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from court.accounts import (
    TokenView,
    admin_login,
    delete_my_token,
    login_page,
    my_reports,
    my_runs,
    my_token,
    password_reset,
    signup,
)
from court.api.urls import router as api
from inference.api import RunViewSet

# One router for the API, so that /api/ lists every resource (it listed only the runs).
api.register("runs", RunViewSet, basename="run")

# The API's documentation pages run Swagger UI and Redoc as they ship, each under a policy widened by
# what it needs. Swagger UI's stylesheet draws its icons from data: URLs. Redoc adds <style> elements
# while its bundle loads, before it could be handed a nonce (so inline styles, on that page only: a
# nonce would make browsers ignore 'unsafe-inline'), searches in a worker started from a blob: URL,
# and shows its maker's logo from their CDN. Scripts stay the site's own on both.
swagger_policy = csp_update({"img-src": ["data:"]})


def redoc_policy(view):
    view = csp_update({"img-src": ["data:", "https://cdn.redoc.ly"], "worker-src": [SELF, "blob:"]})(view)
    return csp_replace({"style-src": [SELF, UNSAFE_INLINE]})(view)


# A path no route matches: JSON under /api/, the site's page elsewhere.
handler404 = "court.error_pages.not_found"
handler403 = "court.error_pages.forbidden"

admin.site.site_header = "Kernel Court administration"
admin.site.site_title = "Kernel Court admin"

urlpatterns = [
    # The admin's log-in and Django's own account forms, rate limited; the rest of each as it comes.
    path("admin/login/", admin_login),
    path("admin/", admin.site.urls),
    path("accounts/signup/", signup, name="signup"),
    path("accounts/login/", login_page, name="login"),
    path("accounts/password_reset/", password_reset, name="password_reset"),
    path("accounts/runs/", my_runs, name="my_runs"),
    path("accounts/reports/", my_reports, name="my_reports"),
    path("accounts/token/", my_token, name="my_token"),
    path("accounts/token/delete/", delete_my_token, name="delete_my_token"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include(api.urls)),
    path("api/", include("court.api.urls")),
    path("api/token/", TokenView.as_view(), name="api-token"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        swagger_policy(SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html")),
        name="api-docs",
    ),
    path(
        "api/redoc/",
        redoc_policy(SpectacularRedocView.as_view(url_name="api-schema", template_name="api/redoc.html")),
        name="api-redoc",
    ),
    path("", include("inference.urls")),
    path("", include("court.urls")),
]

# The database away answers a styled 503 that says to retry; other errors Django's 500.
handler500 = "court.outage.server_error_or_outage"
