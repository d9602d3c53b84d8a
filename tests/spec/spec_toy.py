"""A minimal valid spec the loader tests mutate."""
import textwrap

MINIMAL = textwrap.dedent("""\
    schema_version: 1
    paper:
      id: toy
      arxiv: "2501.00001"
      version: v1
      title: A toy paper
      authors: [A. Author]
      read: {date: 2026-11-29, where: [a PDF]}
      author_code: {status: none}
    equations:
      - id: toy.eq1
        title: the first equation
        where: {section: "2", equation: "1"}
        statement: y = 2 x
        tier: b
        status: implemented
      - id: toy.eq2
        title: the second equation
        where: {section: "2", equation: "2"}
        statement: z = y + 1
        tier: b
        status: not-implemented
        refs: [toy.eq1]
    claims:
      - id: toy.claim.one
        value: "2.5"
        statement: a number
        source: {file: notes.txt, section: "1"}
        oracle: null
        unchecked_reason: toy
        about: [toy.eq1]
    """)
