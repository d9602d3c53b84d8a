"""A record keeps the first line of a failure message, cut at a word with an ellipsis when long
(fidelity/message_line.py): a number is never cut in two and shown as if whole."""
from fidelity.message_line import ELLIPSIS, LIMIT, first_line


def test_the_first_line_of_a_short_message_is_kept_whole():
    assert first_line("GateFailure: 12 of 12 elements differ\n  full tensor follows\n") == \
        "GateFailure: 12 of 12 elements differ"
    assert first_line(None) == first_line("  \n ") == ""


def test_a_long_line_is_cut_at_the_last_word_that_fits_and_says_so():
    line = "worst at index (2, 1): got -0.4906150698661804, expected -0.9420661926269531 " * 10
    kept = first_line(line)
    assert len(kept) <= LIMIT and kept.endswith(ELLIPSIS)
    shown = kept[:-len(ELLIPSIS)]
    assert line.startswith(shown) and line[len(shown)] == " "  # the cut falls between two words


def test_a_line_without_spaces_is_cut_at_the_limit_and_still_says_so():
    kept = first_line("x" * (LIMIT + 50))
    assert len(kept) == LIMIT and kept.endswith(ELLIPSIS)
