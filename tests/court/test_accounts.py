"""Visitors can sign up (with an e-mail address, for password resets), log in and log out."""

import pytest
from django.contrib.auth import get_user_model
from django.core import mail

pytestmark = pytest.mark.django_db

PASSWORD = "kernel-court-pw-9"


def sign_up(client, username, email, next_path=""):
    body = {"username": username, "email": email, "password1": PASSWORD, "password2": PASSWORD}
    return client.post(f"/accounts/signup/{next_path}", body)


def test_sign_up_logs_the_new_user_in_and_returns_to_next(client):
    response = sign_up(client, "ada", "ada@example.org", "?next=/leaderboard/")
    assert response.status_code == 302 and response["Location"] == "/leaderboard/"
    assert get_user_model().objects.filter(username="ada").exists()
    assert b"Log out ada" in client.get("/").content


def test_sign_up_does_not_redirect_off_site(client):
    response = sign_up(client, "bob", "bob@example.org", "?next=https://evil.example/")
    assert response["Location"] == "/"


def test_sign_up_stores_the_email_address(client):
    sign_up(client, "ada", "ada@example.org")
    assert get_user_model().objects.get(username="ada").email == "ada@example.org"


def test_sign_up_asks_for_an_email_address(client):
    assert b'name="email"' in client.get("/accounts/signup/").content
    response = client.post("/accounts/signup/", {"username": "ada", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 200 and b"This field is required." in response.content
    assert not get_user_model().objects.exists()


def test_sign_up_validates_the_email_address(client):
    response = sign_up(client, "ada", "not-an-address")
    assert response.status_code == 200 and b"Enter a valid email address." in response.content
    assert not get_user_model().objects.exists()


def test_sign_up_refuses_an_email_address_taken_in_any_case(client):
    get_user_model().objects.create_user("ada", email="ada@example.org", password=PASSWORD)
    response = sign_up(client, "ada2", "ADA@Example.org")
    assert response.status_code == 200
    assert b"already uses this e-mail address" in response.content
    assert b"<code>/accounts/password_reset/</code>" in response.content
    assert not get_user_model().objects.filter(username="ada2").exists()


def test_a_new_user_can_reset_their_password_by_mail(client):
    sign_up(client, "ada", "ada@example.org")
    client.post("/accounts/logout/")
    assert client.post("/accounts/password_reset/", {"email": "ada@example.org"}).status_code == 302
    assert [message.to for message in mail.outbox] == [["ada@example.org"]]


def test_log_in_page_answers(client):
    assert client.get("/accounts/login/").status_code == 200
