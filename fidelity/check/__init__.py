"""The stages of `fidelity check`; each is run(catalogue, args, say) -> stage result dict with "ok".

The gates stage and `check --subject`'s conformance live one layer down, in fidelity.gaterun, which
`fidelity report` calls too: the report renders a run, check decides from it, neither imports the other.
"""
