"""A streaming chat client for an OpenAI-compatible model server, written against vLLM.

`vllm serve MODEL --reasoning-parser NAME` streams the model's thinking in each delta's
`reasoning_content` field (`reasoning` in newer vLLM) and the answer in `content`; a server
without a parser streams both in `content`, the thinking between `<think>` tags. Both work.
The request asks for `stream_options.include_usage`, so the last chunk before `data: [DONE]`
carries the token counts (with an empty `choices` list).

Failures become an `Error` event whose message names the server and says what to do: the
server cannot be reached (after a few retries), the model name is wrong (vLLM answers 404
"The model `X` does not exist."; we list the models it does serve), the request is refused
(400), the server fails (500) or is not ready (503), it goes silent past the read timeout, or
the stream breaks off before the model finished. A stream is never cut short silently.
"""

import functools
import json
import logging
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpcore  # noqa: F401  (httpx imports it when it builds its first client; see inference.actors)
import httpx
from httpx_sse import EventSource

from inference.backends.events import Error, Event, Finished, ReasoningDelta
from inference.backends.interface import CANCELLED_MESSAGE, CancelCheck, Message, never_cancelled
from inference.backends.think_tags import ThinkTagSplitter

logger = logging.getLogger(__name__)

# Field names vLLM has used for the parsed reasoning, newest first.
REASONING_FIELDS = ("reasoning", "reasoning_content")


@dataclass(frozen=True)
class VLLMConfig:
    base_url: str
    model: str = ""  # empty: the one model the server serves
    api_key: str = ""
    temperature: float = 0.6
    top_p: float = 0.95
    max_tokens: int = 16384
    connect_timeout_s: float = 10.0
    # Between two chunks, not for the whole answer: a reasoning model may think for many minutes.
    read_timeout_s: float = 300.0
    connect_retries: int = 2
    retry_backoff_s: float = 1.0

    @property
    def api_url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/v1") else base + "/v1"


class ServerError(Exception):
    """A failure already phrased for a person; `retryable` when trying again later may help."""

    def __init__(self, message: str, *, retryable: bool = False):
        super().__init__(message)
        self.retryable = retryable


def _error_text(response: httpx.Response) -> str:
    """The message in vLLM's error body ({"error": {"message"}}; older: {"message"}), else the text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error.get("detail") or body)
        return str(error)
    return str(body)


_ssl_context_lock = threading.Lock()


@functools.cache
def _built_ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def _ssl_context() -> ssl.SSLContext:
    """One per process: httpx builds a new one for every client, loading the CA bundle, which
    cost 25 ms of CPU per run (50 runs starting at once stalled everyone's stream for a second).
    Built under a lock: the first runs of a new worker, starting together, each built one."""
    with _ssl_context_lock:
        return _built_ssl_context()


class VLLMBackend:
    name = "vllm"

    def __init__(self, config: VLLMConfig):
        self.config = config

    def _client(self) -> httpx.Client:
        config = self.config
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        timeout = httpx.Timeout(connect=config.connect_timeout_s, read=config.read_timeout_s, write=30.0, pool=30.0)
        return httpx.Client(base_url=config.api_url, headers=headers, timeout=timeout, verify=_ssl_context())

    def _send(self, client: httpx.Client, request: httpx.Request, cancel: CancelCheck) -> httpx.Response:
        """Send, retrying only when the connection cannot be made (nothing reached the model)."""
        for attempt in range(self.config.connect_retries + 1):
            try:
                return client.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt == self.config.connect_retries:
                    raise ServerError(
                        f"Cannot reach the model server at {self.config.api_url}: {exc or type(exc).__name__} "
                        f"(tried {attempt + 1} times). Is `vllm serve` running there, and is "
                        "INFERENCE_VLLM_URL right?",
                        retryable=True,
                    ) from exc
                deadline = time.monotonic() + self.config.retry_backoff_s * 2**attempt
                while time.monotonic() < deadline:
                    if cancel():
                        raise ServerError(CANCELLED_MESSAGE) from exc
                    time.sleep(0.05)
        raise AssertionError("unreachable")

    def served_models(self, client: httpx.Client | None = None) -> list[str]:
        own = client is None
        client = client or self._client()
        try:
            response = client.get("/models")
            response.raise_for_status()
            return [model["id"] for model in response.json().get("data", [])]
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return []
        finally:
            if own:
                client.close()

    def _model(self, client: httpx.Client, cancel: CancelCheck) -> str:
        if self.config.model:
            return self.config.model
        response = self._send(client, client.build_request("GET", "/models"), cancel)
        try:
            response.read()
            models = [m["id"] for m in response.json().get("data", [])] if response.status_code == 200 else []
        except (ValueError, KeyError, TypeError):
            models = []
        finally:
            response.close()
        if len(models) != 1:
            raise ServerError(
                f"No model name is configured and the server at {self.config.api_url} serves "
                f"{', '.join(models) or 'no model it lists'}: set INFERENCE_VLLM_MODEL."
            )
        return models[0]

    def _http_error(self, client: httpx.Client, response: httpx.Response, model: str) -> ServerError:
        url = self.config.api_url
        status = response.status_code
        text = _error_text(response)
        if status == 404 and "does not exist" in text:
            served = self.served_models(client)
            return ServerError(
                f"The model server at {url} does not serve the model {model!r} ({text}). "
                f"It serves: {', '.join(served) or 'nothing it lists'}. Set INFERENCE_VLLM_MODEL "
                "(or the run's model name) to one of those."
            )
        if status == 404:
            return ServerError(
                f"The server at {url} has no chat completions endpoint (HTTP 404: {text}). Point "
                "INFERENCE_VLLM_URL at an OpenAI-compatible server, e.g. http://host:8000/v1."
            )
        if status in (401, 403):
            return ServerError(
                f"The model server at {url} refused the API key (HTTP {status}: {text}). Set INFERENCE_VLLM_API_KEY."
            )
        if status == 400:
            return ServerError(
                f"The model server at {url} refused the request (HTTP 400: {text}). If the prompt "
                "is too long for the model's context, lower INFERENCE_MAX_TOKENS or use a model "
                "with a longer context."
            )
        if status == 503:
            return ServerError(
                f"The model server at {url} is not ready (HTTP 503: {text}); it may still be loading "
                "the model. Try again in a minute.",
                retryable=True,
            )
        return ServerError(
            f"The model server at {url} failed (HTTP {status}: {text}). Its log says why; try again.",
            retryable=status >= 500,
        )

    def _payload(self, messages: list[Message], model: str) -> dict:
        config = self.config
        return {
            "model": model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": config.temperature,
            "top_p": config.top_p,
            "max_tokens": config.max_tokens,
        }

    def stream(self, messages: list[Message], *, cancel: CancelCheck = never_cancelled) -> Iterator[Event]:
        started = time.monotonic()
        try:
            with self._client() as client:
                model = self._model(client, cancel)
                request = client.build_request("POST", "/chat/completions", json=self._payload(messages, model))
                response = self._send(client, request, cancel)
                try:
                    if response.status_code != 200:
                        response.read()
                        raise self._http_error(client, response, model)
                    yield from self._events(response, started, cancel)
                finally:
                    response.close()
        except ServerError as exc:
            yield Error(str(exc), retryable=exc.retryable)
        except httpx.ReadTimeout:
            yield Error(
                f"The model server at {self.config.api_url} sent nothing for "
                f"{self.config.read_timeout_s:g} s, so the answer was abandoned. The server may "
                "be overloaded; try again, or raise INFERENCE_READ_TIMEOUT_S.",
                retryable=True,
            )
        except httpx.HTTPError as exc:
            yield Error(
                f"The connection to the model server at {self.config.api_url} broke off mid-answer "
                f"({type(exc).__name__}: {exc}). The partial answer was not used; try again.",
                retryable=True,
            )

    def _events(self, response: httpx.Response, started: float, cancel: CancelCheck) -> Iterator[Event]:
        splitter = ThinkTagSplitter()
        first_token_at = None
        finish_reason = None
        usage: dict = {}
        done = False
        for sse in EventSource(response).iter_sse():
            if cancel():
                yield Error(CANCELLED_MESSAGE)
                return
            if sse.data.strip() == "[DONE]":
                done = True
                break
            try:
                chunk = json.loads(sse.data)
            except ValueError as exc:
                raise ServerError(
                    f"The model server at {self.config.api_url} sent a chunk that is not JSON: {sse.data[:200]!r}"
                ) from exc
            if "error" in chunk or chunk.get("object") == "error":
                error = chunk.get("error", chunk)
                message = error.get("message", error) if isinstance(error, dict) else error
                raise ServerError(f"The model server at {self.config.api_url} failed mid-answer: {message}", retryable=True)
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                events: list[Event] = []
                reasoning = next((delta[f] for f in REASONING_FIELDS if delta.get(f)), None)
                if reasoning:
                    events.append(ReasoningDelta(reasoning))
                if delta.get("content"):
                    events += splitter.feed(delta["content"])
                if choice.get("finish_reason"):
                    finish_reason = choice["finish_reason"]
                    events += splitter.flush()
                for event in events:
                    if first_token_at is None:
                        first_token_at = time.monotonic()
                    yield event
        if finish_reason is None:
            raise ServerError(
                f"The model server at {self.config.api_url} ended the stream before the answer was "
                f"finished ({'[DONE] without a finish reason' if done else 'no [DONE]'}). The partial "
                "answer was not used; try again.",
                retryable=True,
            )
        yield from splitter.flush()
        yield Finished(
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            time_to_first_token_s=None if first_token_at is None else first_token_at - started,
            total_s=time.monotonic() - started,
            finish_reason=finish_reason,
        )
