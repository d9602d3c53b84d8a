"""One run of the gate suite, and what it says per gate and per subject: `check` decides from it, `report`
renders it, and neither imports the other.

- gates_stage.py         run the suite in a child pytest (on every core), read its per-instance results; the
                         gates stage of `fidelity check`; warm_pytest.py that child forked from check's own
                         process where that starts as a fresh one would
- forked_workers.py      the suite collected once, each test file run in a process forked after collection;
                         fork_threads.py the math-library threads of the parent and of each fork
- kept_gate_run.py       the last run's results kept per instance under the key of its inputs (check --changed),
                         its targets' sources by the functions the run heard called (perturb/target_functions.py)
- subject_gate_files.py  the gate files a subject can be held by (those naming a mechanism it provides)
- conformance.py         `check --subject`: someone else's implementation, equation by equation
- instance_view.py       every instance a subject ran, with what it was given; verdict_words.py their words
"""
