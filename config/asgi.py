"""The ASGI entry point: HTTP through Django, WebSockets through Channels.

In embedded mode this is also where the in-process Dramatiq worker threads start, so the one
command that serves the site also verifies candidates.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402  (needs the app registry ready)
from django.conf import settings  # noqa: E402

from config.routing import websocket_application  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": websocket_application,
    }
)

if settings.EMBEDDED_WORKER:
    from config.embedded import start_embedded_worker

    start_embedded_worker()
