"""A toy subject: three one-line formulas the toy gates check."""
import math


def add(a, b):
    return a + b


def scale(x):
    return 2.0 * x


def neg(x):
    return -x


TAU = 2 * math.pi
