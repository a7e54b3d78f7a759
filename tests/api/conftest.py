"""API clients for the three kinds of caller: anonymous, a signed-in user (token), staff (token)."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
        client.user = user
    return client


@pytest.fixture
def anonymous():
    return client_for()


@pytest.fixture
def user(db):
    return client_for(get_user_model().objects.create_user("user", "user@example.org", "pw-user-123"))


@pytest.fixture
def staff(db):
    return client_for(get_user_model().objects.create_user("staff", "staff@example.org", "pw-staff-123", is_staff=True))
