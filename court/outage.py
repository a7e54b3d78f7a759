"""The answer while the database is unreachable: a styled 503 that says to retry (pages), or the
same words as JSON (the API), with Retry-After, instead of a bare "Server Error (500)". Any other
error stays Django's 500.

The page extends nothing: the site's layout reads the signed-in user, which needs the database.
"""

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template import loader
from django.views.defaults import server_error

UNREACHABLE = (
    "The site's database cannot be reached right now, so nothing can be read or saved. "
    "Try again in a minute: what was saved before is kept."
)
RETRY_AFTER_S = 30


def server_error_or_outage(request):
    """handler500: called while the uncaught exception is being handled, so it is sys.exc_info()'s."""
    if not isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        return server_error(request)
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": UNREACHABLE}, status=503)
    else:
        response = HttpResponse(loader.render_to_string("503.html", {"message": UNREACHABLE}), status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response
