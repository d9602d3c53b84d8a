"""Adapters: public packages as subjects, held to the same gates as our reference.

One module per package, each exposing `SUBJECT` (a fidelity.subjects.Subject):

- hyper_connections.py   `hyper-connections` (lucidrains): its mHC module, its HC module and its
                         Sinkhorn functions. Also `LOG_DOMAIN_SUBJECT` (the same package driven with
                         its log-domain Sinkhorn, `log_domain_sinkhorn=True`).
- attn_res.py            `attn-res` (kyegomez): its AttnResOperator (depth attention) and its Block /
                         Full AttnRes schedule (`AttnResTransformer._forward_block_attnres` / `_full_`).
- pot.py                 `pot` (Python Optimal Transport): its log-domain Sinkhorn, `ot.sinkhorn(...,
                         method="sinkhorn_log")`, as an independent Sinkhorn of mHC Eq. 9.

Rules every adapter keeps (they are what makes a red gate a finding about the package):

1. The package is imported lazily, inside the callables, so importing an adapter never fails
   and a perturbation (which patches the package's module in a child process) is always the
   code that runs. `unavailable_reason()` says "package X not installed (pip install
   'fidelity[thirdparty]')" when the import fails.
2. No silent casts. A package that computes in float32 only (it calls `.float()` inside)
   declares Capability(dtypes=("float32",), ...) and raises NotRun("... only float32 ...") for
   any other dtype: that gate instance is reported as NOT RUN, never as passed or failed.
3. No fixing up. The adapter reshapes inputs into the package's layout and the output back,
   names the package's parameters by our names, and does nothing else: no clamps, no
   renormalisation, no retries, no transposes that are not a documented change of notation.
4. What the package cannot do is NotRun (fidelity.subjects.subject.NotRun) with the reason, never a
   bare NotImplementedError (the gates count that as red, like torch's own): a score convention it
   lacks, a layout it lacks, a manual backward, a parameter our interface has and the package
   does not (e.g. a full [nC, n] phi_pre), an init option it does not offer.
5. Observation, not recomputation. Where the interface returns an intermediate (alpha of depth
   attention, the mHC coefficients) the adapter records the tensor the package itself computed
   (a forward hook on the package's own submodule, or a TorchFunctionMode that records one
   function's result without changing it); it never recomputes the formula itself.

`capabilities` of each SUBJECT declares, per mechanism, the dtypes, devices and gradient routes
it drives (fidelity.mechanisms.Capability). `modules` names the package's own modules, so the
perturbation runner can patch the package's source and find the gates that cover it.
"""
