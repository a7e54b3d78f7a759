"""A real HTTP server on 127.0.0.1 that answers like vLLM by replaying transcripts.

Each server plays one scenario: the status and body to answer `/v1/chat/completions` with, and
how to misbehave (drop the connection or go silent after some events). `/v1/models` lists the
one model the transcripts were recorded from. Requests are kept for the tests to inspect.
"""

import json
import socket
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"
SERVED_MODEL = "Qwen/QwQ-32B"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client hanging up is what several tests do on purpose.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass
class Scenario:
    body: str  # a file in transcripts/
    status: int = 200
    drop_after: int | None = None  # events sent before the connection is cut
    stall_after: int | None = None  # events sent before the server goes silent
    event_delay_s: float = 0.0
    # Each answer has ANSWER_NUMBER replaced by its request's number (1, 2, ...): every call writes
    # different code, as the builtin optimizer and any sampled model do.
    numbered: bool = False


ANSWER_NUMBER = "@ANSWER_NUMBER@"


@dataclass
class ReplayServer:
    scenario: Scenario
    requests: list[dict] = field(default_factory=list)
    client_went_away: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path == "/v1/models":
                    self._send_whole(200, (TRANSCRIPTS / "models.json").read_bytes(), "application/json")
                else:
                    self._send_whole(404, b'{"detail":"Not Found"}', "application/json")

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "json": body, "headers": dict(self.headers)})
                scenario = server.scenario
                if self.path != "/v1/chat/completions":
                    self._send_whole(404, b'{"detail":"Not Found"}', "application/json")
                elif scenario.status != 200:
                    text = (TRANSCRIPTS / scenario.body).read_text().replace("Qwen/QwQ-32B-typo", body["model"])
                    kind = "application/json" if scenario.body.endswith(".json") else "text/plain"
                    self._send_whole(scenario.status, text.encode(), kind)
                else:
                    self._stream(scenario)

            def _send_whole(self, status, payload, content_type):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, scenario):
                text = (TRANSCRIPTS / scenario.body).read_text()
                if scenario.numbered:
                    text = text.replace(ANSWER_NUMBER, str(len(server.requests)))
                events = [e + "\n\n" for e in text.split("\n\n") if e]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for index, event in enumerate(events):
                        if index == scenario.drop_after:
                            self.connection.shutdown(socket.SHUT_RDWR)
                            return
                        if index == scenario.stall_after:
                            server.release.wait(timeout=10)
                            return
                        data = event.encode()
                        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                        self.wfile.flush()
                        if scenario.event_delay_s:
                            server.release.wait(timeout=scenario.event_delay_s)
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    server.client_went_away.set()

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address
        return f"http://{host}:{port}"

    def stop(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
