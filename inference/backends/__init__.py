"""Model backends: where candidates come from.

`get_backend(name, **options)` builds one by name, from the settings in `config/settings.py`
(`INFERENCE_*`), with `options` overriding them (None means "use the setting"):

- "builtin": the rule-based optimizer, always there (`inference.backends.builtin`);
- "vllm": an OpenAI-compatible streaming server, when INFERENCE_VLLM_URL is set
  (`inference.backends.vllm`); options: model, base_url, api_key, temperature, top_p,
  max_tokens, connect_timeout_s, read_timeout_s, connect_retries;

Every backend has `stream(messages, *, cancel=...)` yielding `inference.backends.events`.
Settings are read when a backend is built, not on import: the builtin optimizer and the GPU
benchmark import this package where Django is not installed.
"""

from inference.backends.interface import Backend

LABELS = {
    "builtin": "Builtin optimizer (rule-based, no model)",
    "vllm": "Model on the vLLM server",
}


class UnknownBackend(ValueError):
    """A backend name that is not known or not configured; the message says which are."""


def available_backends() -> list[str]:
    from django.conf import settings

    names = ["builtin"]
    if settings.INFERENCE_VLLM_URL:
        names.append("vllm")
    return names


def backend_choices() -> list[tuple[str, str]]:
    """(name, label) pairs for a form, in the order of `available_backends`."""
    from django.conf import settings

    choices = []
    for name in available_backends():
        label = LABELS[name]
        if name == "vllm" and settings.INFERENCE_VLLM_MODEL:
            label = f"{settings.INFERENCE_VLLM_MODEL} (vLLM)"
        choices.append((name, label))
    return choices


def _given(options: dict) -> dict:
    return {key: value for key, value in options.items() if value is not None and value != ""}


def _builtin(**options) -> Backend:
    from django.conf import settings

    from inference.backends.builtin import BuiltinBackend

    options.pop("model", None)  # the builtin optimizer has no model to choose
    return BuiltinBackend(
        analysis_timeout_s=options.pop("analysis_timeout_s", settings.INFERENCE_BUILTIN_ANALYSIS_TIMEOUT_S),
        allow_unconfined=not settings.SANDBOX_REQUIRED,
        **options,
    )


def _vllm(**options) -> Backend:
    from django.conf import settings

    from inference.backends.vllm import VLLMBackend, VLLMConfig

    config = {
        "base_url": settings.INFERENCE_VLLM_URL,
        "model": settings.INFERENCE_VLLM_MODEL,
        "api_key": settings.INFERENCE_VLLM_API_KEY,
        "temperature": settings.INFERENCE_TEMPERATURE,
        "top_p": settings.INFERENCE_TOP_P,
        "max_tokens": settings.INFERENCE_MAX_TOKENS,
        "connect_timeout_s": settings.INFERENCE_CONNECT_TIMEOUT_S,
        "read_timeout_s": settings.INFERENCE_READ_TIMEOUT_S,
        "connect_retries": settings.INFERENCE_CONNECT_RETRIES,
        **options,
    }
    if not config["base_url"]:
        raise UnknownBackend("The vllm backend needs INFERENCE_VLLM_URL (for example http://localhost:8000/v1).")
    return VLLMBackend(VLLMConfig(**config))


FACTORIES = {"builtin": _builtin, "vllm": _vllm}


def get_backend(name: str, **options) -> Backend:
    factory = FACTORIES.get(name)
    if factory is None:
        raise UnknownBackend(f"Unknown backend {name!r}: choose one of {', '.join(FACTORIES)}.")
    return factory(**_given(options))
