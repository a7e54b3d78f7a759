"""A signed-in user's API token page (issue 33): see, create, replace and delete the token the API's
writes need, without curl."""

import re

import pytest
from rest_framework.authtoken.models import Token

from tests.api.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(client, django_user_model):
    user = django_user_model.objects.create_user("ada", email="ada@example.org")
    client.force_login(user)
    return user


def shown_key(response) -> str:
    """The full key the page shows, in its curl example."""
    return re.search(rb"Authorization: Token ([0-9a-f]{40})", response.content).group(1).decode()


def api_status(key: str) -> int:
    """What an API route that only answers a signed-in caller answers the key."""
    return client_for().get("/api/reports/", HTTP_AUTHORIZATION=f"Token {key}").status_code


def test_anonymous_visitors_are_sent_to_log_in(client):
    response = client.get("/accounts/token/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/accounts/token/"
    assert client.post("/accounts/token/").status_code == 302
    assert not Token.objects.exists()


def test_it_is_linked_from_the_header(client, ada):
    assert b'href="/accounts/token/">API token</a>' in client.get("/").content


def test_it_says_when_there_is_no_token(client, ada):
    response = client.get("/accounts/token/")
    assert b"You have no API token." in response.content
    assert b"Create a token" in response.content and b"csrfmiddlewaretoken" in response.content


def test_a_created_token_is_shown_once_and_works(client, ada):
    response = client.post("/accounts/token/")
    key = shown_key(response)
    assert Token.objects.get(user=ada).key == key
    assert b"Copy it now" in response.content
    later = client.get("/accounts/token/")
    assert key.encode() not in later.content and f"{key[:4]}…".encode() in later.content
    assert b"Replace the token" in later.content and b"Delete the token" in later.content
    assert api_status(key) == 200


def test_replacing_a_token_invalidates_the_old_one(client, ada):
    old = Token.objects.create(user=ada).key
    new = shown_key(client.post("/accounts/token/"))
    assert new != old
    assert api_status(old) == 401
    assert api_status(new) == 200


def test_deleting_a_token_invalidates_it(client, ada):
    key = Token.objects.create(user=ada).key
    response = client.post("/accounts/token/delete/")
    assert response.status_code == 302 and response["Location"] == "/accounts/token/"
    assert not Token.objects.exists()
    assert api_status(key) == 401
    assert b"You have no API token." in client.get("/accounts/token/").content


def test_the_page_is_not_cached(client, ada):
    assert "no-store" in client.post("/accounts/token/")["Cache-Control"]
