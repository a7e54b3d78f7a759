"""Visitors can sign up, log in and log out."""

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db


def test_sign_up_logs_the_new_user_in_and_returns_to_next(client):
    response = client.post(
        "/accounts/signup/?next=/leaderboard/",
        {"username": "ada", "password1": "kernel-court-pw-9", "password2": "kernel-court-pw-9"},
    )
    assert response.status_code == 302 and response["Location"] == "/leaderboard/"
    assert get_user_model().objects.filter(username="ada").exists()
    assert b"Log out ada" in client.get("/").content


def test_sign_up_does_not_redirect_off_site(client):
    response = client.post(
        "/accounts/signup/?next=https://evil.example/",
        {"username": "bob", "password1": "kernel-court-pw-9", "password2": "kernel-court-pw-9"},
    )
    assert response["Location"] == "/"


def test_log_in_page_answers(client):
    assert client.get("/accounts/login/").status_code == 200
