"""The site's 404 and 403 pages, in its layout: what was not found or refused, and what exists instead
(the boards there are, the problems, the demo). Under /api/ a 404 is JSON, as every API answer is."""

from django.http import Http404, JsonResponse
from django.shortcuts import render

from court import leaderboard

# What a 404 says when its cause gave no words for a person (Django's own "No X matches the given query.").
NOT_FOUND = "There is nothing here, or it is not shown to you."


def _said(exception) -> str:
    """The message a view gave its 404, where it wrote one for a person."""
    message = str(exception.args[0]) if isinstance(exception, Http404) and exception.args else ""
    return "" if not message or "matches the given query" in message else message


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "No such API route: /api/schema/ lists them, /api/docs/ shows them."}, status=404)
    context = {"detail": _said(exception) or NOT_FOUND, "archs": leaderboard.leaderboard_archs()}
    return render(request, "404.html", context, status=404)


def forbidden(request, exception=None):
    return render(request, "403.html", {"archs": leaderboard.leaderboard_archs()}, status=403)
