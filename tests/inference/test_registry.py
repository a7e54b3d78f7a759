"""Choosing a backend by name, configured from settings."""

import pytest

from inference.backends import UnknownBackend, available_backends, backend_choices, get_backend


def test_the_builtin_optimizer_is_always_there(settings):
    settings.INFERENCE_VLLM_URL = ""

    assert available_backends() == ["builtin"]
    assert get_backend("builtin", model=None).name == "builtin"


def test_a_configured_vllm_server_is_offered_with_its_model(settings):
    settings.INFERENCE_VLLM_URL = "http://gpu-host:8000/v1"
    settings.INFERENCE_VLLM_MODEL = "Qwen/QwQ-32B"

    assert ("vllm", "Qwen/QwQ-32B (vLLM)") in backend_choices()


def test_options_override_settings_and_none_keeps_them(settings):
    settings.INFERENCE_VLLM_URL = "http://gpu-host:8000"
    settings.INFERENCE_VLLM_MODEL = "Qwen/QwQ-32B"
    settings.INFERENCE_TEMPERATURE = 0.6

    backend = get_backend("vllm", model=None, temperature=0.1)

    assert (backend.config.model, backend.config.temperature) == ("Qwen/QwQ-32B", 0.1)
    assert backend.config.api_url == "http://gpu-host:8000/v1"


def test_vllm_without_a_url_says_what_to_set(settings):
    settings.INFERENCE_VLLM_URL = ""

    with pytest.raises(UnknownBackend, match="INFERENCE_VLLM_URL"):
        get_backend("vllm")


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(UnknownBackend, match="choose one of builtin, vllm"):
        get_backend("gpt")
