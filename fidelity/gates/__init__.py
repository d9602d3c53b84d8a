"""Support code for gates: readings, tolerance policy, comparison messages."""
