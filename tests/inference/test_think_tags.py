"""Splitting <think> reasoning out of streamed content, wherever the chunks break."""

from inference.backends.events import AnswerDelta, ReasoningDelta
from inference.backends.think_tags import ThinkTagSplitter

TEXT = "<think>\nuse a < b and </thin ones</think>\n\nAnswer: a<b, x</th>"


def split(pieces: list[str]) -> tuple[str, str]:
    splitter = ThinkTagSplitter()
    events = [e for piece in pieces for e in splitter.feed(piece)] + splitter.flush()
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    answer = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    return reasoning, answer


def test_tags_split_at_any_point_give_the_same_result():
    expected = ("\nuse a < b and </thin ones", "\n\nAnswer: a<b, x</th>")

    for cut in range(len(TEXT) + 1):
        for second_cut in range(cut, len(TEXT) + 1):
            assert split([TEXT[:cut], TEXT[cut:second_cut], TEXT[second_cut:]]) == expected


def test_character_by_character_streaming_works():
    assert split(list(TEXT)) == split([TEXT])


def test_text_without_tags_is_all_answer():
    assert split(["plain ", "answer <b>"]) == ("", "plain answer <b>")


def test_a_closing_tag_without_an_opening_one_stays_in_the_answer():
    assert split(["thinking...</th", "ink>done"]) == ("", "thinking...</think>done")
