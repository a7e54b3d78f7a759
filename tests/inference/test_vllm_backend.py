"""The vLLM client against a real local server replaying vLLM stream transcripts."""

import pytest

from inference.backends.events import AnswerDelta, Error, Finished, ReasoningDelta
from inference.backends.vllm import VLLMBackend, VLLMConfig
from inference.extraction import extract_candidate
from tests.inference.model_server import SERVED_MODEL, ReplayServer, Scenario, unused_port

MESSAGES = [{"role": "system", "content": "You write kernels."}, {"role": "user", "content": "Fuse this."}]
REASONING = "Okay, the model multiplies two matrices and applies ReLU. A fused epilogue saves one pass over memory."


@pytest.fixture
def serve():
    servers = []

    def start(body: str, **behaviour) -> ReplayServer:
        servers.append(ReplayServer(Scenario(body, **behaviour)))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def backend(url: str, **options) -> VLLMBackend:
    return VLLMBackend(VLLMConfig(base_url=url, model=options.pop("model", SERVED_MODEL), **options))


def run(backend: VLLMBackend, **kwargs) -> tuple[str, str, list]:
    events = list(backend.stream(MESSAGES, **kwargs))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    answer = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    return reasoning, answer, events


@pytest.mark.parametrize("transcript", ["reasoning_content.sse", "reasoning_field.sse", "think_tags.sse"])
def test_reasoning_and_answer_are_told_apart(serve, transcript):
    server = serve(transcript)

    reasoning, answer, events = run(backend(server.url))

    assert reasoning.strip() == REASONING
    assert "<think>" not in answer and "</think>" not in answer
    assert answer.lstrip().startswith("The ReLU is fused")
    assert extract_candidate(answer).code.startswith("import torch")
    assert isinstance(events[-1], Finished)


def test_finished_carries_token_counts_and_timings(serve):
    server = serve("reasoning_content.sse")

    finished = run(backend(server.url))[2][-1]

    assert (finished.prompt_tokens, finished.completion_tokens) == (412, 43)
    assert finished.finish_reason == "stop"
    assert 0 <= finished.time_to_first_token_s <= finished.total_s


def test_the_request_asks_for_a_stream_with_usage_and_the_sampling_settings(serve):
    server = serve("reasoning_content.sse")

    run(backend(server.url + "/v1", api_key="secret", temperature=0.2, top_p=0.9, max_tokens=1000))

    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer secret"
    assert request["json"]["stream_options"] == {"include_usage": True}
    assert (request["json"]["temperature"], request["json"]["top_p"], request["json"]["max_tokens"]) == (0.2, 0.9, 1000)
    assert request["json"]["messages"] == MESSAGES


def test_without_a_model_name_the_served_model_is_used(serve):
    server = serve("reasoning_content.sse")

    run(backend(server.url, model=""))

    assert server.requests[0]["json"]["model"] == SERVED_MODEL


def test_a_dropped_connection_mid_stream_is_an_error_not_a_short_answer(serve):
    server = serve("reasoning_content.sse", drop_after=8)

    reasoning, answer, events = run(backend(server.url))

    assert reasoning and isinstance(events[-1], Error)
    assert not any(isinstance(e, Finished) for e in events)
    assert "broke off mid-answer" in events[-1].message and events[-1].retryable


def test_an_error_sent_mid_stream_is_reported(serve):
    server = serve("generation_error.sse")

    error = run(backend(server.url))[2][-1]

    assert isinstance(error, Error)
    assert "failed mid-answer: Internal server error" in error.message


def test_a_wrong_model_name_lists_the_models_the_server_has(serve):
    server = serve("model_not_found.json", status=404)

    error = run(backend(server.url, model="Qwen/QwQ-32B-typo"))[2][-1]

    assert "does not serve the model 'Qwen/QwQ-32B-typo'" in error.message
    assert "The model `Qwen/QwQ-32B-typo` does not exist." in error.message
    assert f"It serves: {SERVED_MODEL}" in error.message


def test_a_refused_request_shows_the_servers_reason(serve):
    server = serve("context_too_long.json", status=400)

    error = run(backend(server.url))[2][-1]

    assert "refused the request (HTTP 400: 'max_tokens' or 'max_completion_tokens' is too large" in error.message
    assert "INFERENCE_MAX_TOKENS" in error.message


def test_a_server_failure_is_retryable(serve):
    server = serve("internal_error.json", status=500)

    error = run(backend(server.url))[2][-1]

    assert "failed (HTTP 500: EngineCore encountered an issue" in error.message and error.retryable


def test_a_server_not_ready_says_to_try_again(serve):
    server = serve("service_unavailable.txt", status=503)

    error = run(backend(server.url))[2][-1]

    assert "is not ready (HTTP 503: Service Unavailable)" in error.message and error.retryable


def test_a_server_that_is_down_cannot_be_reached_after_retries():
    url = f"http://127.0.0.1:{unused_port()}"

    events = list(backend(url, connect_retries=2, retry_backoff_s=0.01).stream(MESSAGES))

    assert len(events) == 1
    assert events[0].message.startswith(f"Cannot reach the model server at {url}/v1:")
    assert "tried 3 times" in events[0].message


def test_a_silent_server_times_out(serve):
    server = serve("reasoning_content.sse", stall_after=5)

    reasoning, _, events = run(backend(server.url, read_timeout_s=0.5))

    assert reasoning.startswith("Okay")
    assert "sent nothing for 0.5 s" in events[-1].message and events[-1].retryable


def test_the_cancel_check_stops_the_stream(serve):
    server = serve("reasoning_content.sse")
    seen = []

    events = list(backend(server.url).stream(MESSAGES, cancel=lambda: len(seen) >= 3 or seen.append(1)))

    assert isinstance(events[-1], Error) and events[-1].message.startswith("Cancelled")
    assert len(events) < 10


def test_closing_the_stream_hangs_up_on_the_server(serve):
    server = serve("reasoning_content.sse", event_delay_s=0.05)

    stream = backend(server.url).stream(MESSAGES)
    next(stream)
    stream.close()

    assert server.client_went_away.wait(timeout=5)
