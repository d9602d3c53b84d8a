"""Subjects: the implementations under test, each described for the gates and the runner.

- subject.py          the Subject record (its mechanisms, capabilities, availability, source modules)
- registry.py         the subjects a run holds: the project's, installed entry points, adapters
- torch_reference.py  this repository's PyTorch reference; triton_kernels.py its fused kernels
"""
