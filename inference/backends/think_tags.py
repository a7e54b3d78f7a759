"""Splitting `<think>`...`</think>` out of streamed answer text, for servers without a reasoning
parser. A tag may arrive split across chunks (`<th` then `ink>`), so the end of each chunk that
could be the start of a tag is held back until the next chunk decides it.

A `</think>` with no `<think>` before it (chat templates that open the think block in the prompt)
is passed through in the answer text; `inference.extraction` ignores everything before it.
"""

from inference.backends.events import AnswerDelta, ReasoningDelta

OPEN = "<think>"
CLOSE = "</think>"


def _partial_tag_length(text: str, tags: tuple[str, ...]) -> int:
    """How many characters at the end of `text` could begin one of `tags`."""
    for length in range(min(len(text), max(map(len, tags)) - 1), 0, -1):
        if any(tag.startswith(text[-length:]) for tag in tags):
            return length
    return 0


class ThinkTagSplitter:
    def __init__(self):
        self._held = ""
        self._inside = False

    def _event(self, text: str) -> list[ReasoningDelta | AnswerDelta]:
        if not text:
            return []
        return [ReasoningDelta(text) if self._inside else AnswerDelta(text)]

    def feed(self, text: str) -> list[ReasoningDelta | AnswerDelta]:
        events = []
        text = self._held + text
        self._held = ""
        while text:
            if self._inside:
                index = text.find(CLOSE)
                if index < 0:
                    break
                events += self._event(text[:index])
                text = text[index + len(CLOSE) :]
                self._inside = False
                continue
            opening, closing = text.find(OPEN), text.find(CLOSE)
            if opening >= 0 and (closing < 0 or opening < closing):
                events += self._event(text[:opening])
                text = text[opening + len(OPEN) :]
                self._inside = True
            elif closing >= 0:
                events += self._event(text[: closing + len(CLOSE)])
                text = text[closing + len(CLOSE) :]
            else:
                break
        held = _partial_tag_length(text, (CLOSE,) if self._inside else (OPEN, CLOSE))
        if held:
            text, self._held = text[:-held], text[-held:]
        return events + self._event(text)

    def flush(self) -> list[ReasoningDelta | AnswerDelta]:
        held, self._held = self._held, ""
        return self._event(held)
