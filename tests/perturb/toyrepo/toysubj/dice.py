"""A toy subject whose right answer is a constant: a defect may make it draw from the global generator."""


def roll():
    return 0.5
