"""Fixtures for the domain app's (court) tests."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient


@pytest.fixture
def staff_api(db):
    """An API client signed in as a staff member (a curator, not a superuser); `.user` is them."""
    client = APIClient()
    client.user = get_user_model().objects.create_user("curator", is_staff=True)
    client.force_authenticate(client.user)
    return client
