"""A comment-only edit of a Python source, for the tests of keys by meaning (fidelity/source_meaning.py)."""


def commented_and_redocumented(text: str) -> str:
    """`text` with its module docstring rewritten (or one added), and comment and blank lines at the top,
    between top-level definitions and at the end: what it means is unchanged, every line number moves."""
    if text.startswith('"""'):
        text = text[text.index('"""', 3) + 3:]
    return ('"""A docstring, rewritten since the run."""\n# a comment\n\n'
            + text.replace("\n\n\n", "\n\n\n# a note\n\n") + "\n# end\n")
