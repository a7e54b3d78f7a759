"""Accounts: sign-up beside Django's own log-in and log-out views, the API's token (rate limited, by
password at /api/token/ or from the signed-in user's token page), and a signed-in user's own runs and
hack reports."""

from django.contrib import admin
from django.contrib.auth import login, views
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from drf_spectacular.utils import extend_schema
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken

from court import selectors
from court.forms import SignUpForm
from court.rate_limits import Throttle, limit_posts

LOGIN_SCOPES = ("login", "login_account")

# Every form that checks a password, so that guesses cost the same wherever they are made.
login_page = limit_posts(*LOGIN_SCOPES)(views.LoginView.as_view())
admin_login = limit_posts(*LOGIN_SCOPES)(admin.site.login)
password_reset = limit_posts("accounts")(views.PasswordResetView.as_view())


class TokenView(ObtainAuthToken):
    """POST a username and password for the API token."""

    # As a form too: the README's curl example posts one. Wrong credentials answer 400, as an OAuth
    # token endpoint answers a grant it refuses (RFC 6749, 5.2).
    @extend_schema(
        request={"application/json": AuthTokenSerializer, "application/x-www-form-urlencoded": AuthTokenSerializer},
        responses=AuthTokenSerializer,
    )
    def post(self, request, *args, **kwargs):
        return super().post(request, *args, **kwargs)

    def get_throttles(self):
        return [Throttle(scope) for scope in LOGIN_SCOPES]


@limit_posts("accounts")
def signup(request):
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user)
        target = request.GET.get("next", "/")
        if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
            target = "/"
        return redirect(target)
    return render(request, "registration/signup.html", {"form": form})


MY_PAGE_SIZE = 50


@login_required
def my_runs(request):
    page = Paginator(selectors.runs_of(request.user), MY_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "court/my_runs.html", {"heading": "My runs", "page": page})


@login_required
def my_reports(request):
    page = Paginator(selectors.reports_of(request.user), MY_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "court/my_reports.html", {"heading": "My reports", "page": page})


def issue_token(*, user) -> Token:
    """A new API token for `user`, replacing any they had: the old one stops working at once."""
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


def revoke_token(*, user) -> None:
    Token.objects.filter(user=user).delete()


# Not cached anywhere: right after it is issued, the page holds the token in full.
@never_cache
@login_required
@limit_posts("tokens")
def my_token(request):
    """The user's API token: whether they have one, and a form to create or replace it. The key is
    shown in full only in the answer to the POST that issued it; afterwards its first characters."""
    issued = issue_token(user=request.user) if request.method == "POST" else None
    token = issued or Token.objects.filter(user=request.user).first()
    context = {"heading": "API token", "token": token, "issued": issued is not None}
    return render(request, "court/my_token.html", context)


@require_POST
@login_required
def delete_my_token(request):
    revoke_token(user=request.user)
    return redirect("my_token")
