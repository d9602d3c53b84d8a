"""A toy subject that is wrong before any perturbation: its gate is red at baseline."""


def one():
    return 2
