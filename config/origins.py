"""WebSocket handshakes only from the site's own pages.

The Origin must be the scheme, host and port the socket was opened on (its Host header, itself an
allowed host), or one of CSRF_TRUSTED_ORIGINS: what Django's CSRF check asks of a form. Channels'
AllowedHostsOriginValidator compares host names only, so a page served by any other port of an
allowed host (another service on the same machine) could open our sockets.
"""

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host


def same_origin(headers: dict[bytes, bytes]) -> bool:
    origin = headers.get(b"origin", b"").decode("latin-1").lower()
    host = headers.get(b"host", b"").decode("latin-1").lower()
    if not origin or not host:
        return False
    if origin in {trusted.lower() for trusted in settings.CSRF_TRUSTED_ORIGINS}:
        return True
    parts = urlsplit(origin)
    domain, _ = split_domain_port(host)
    return parts.scheme in ("http", "https") and parts.netloc == host and validate_host(domain, settings.ALLOWED_HOSTS)


class SameOriginValidator:
    """ASGI middleware: refuses the handshake (403) of a socket opened from another origin."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not same_origin(dict(scope["headers"])):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
