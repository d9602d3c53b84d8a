"""The stages of `fidelity check`; each is run(catalogue, args, say) -> stage result dict with "ok"."""
