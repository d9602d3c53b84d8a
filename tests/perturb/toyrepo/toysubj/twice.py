"""A second toy subject: one gate drives both it and toysubj.arith, one instance each."""


def double(x):
    return 2.0 * x
