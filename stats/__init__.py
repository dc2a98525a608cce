"""Adaptive statistics (the paper's Sect. 3.3): what scans learn about the
files they read, for the planner and for skipping data.

- ``hll``: HyperLogLog++ distinct counts (XXH64 of PLAIN encodings, p = 14)
- ``sample``: the table's row sample (1024 positions, fixed per file set)
- ``synopses``: min / max / NULL count per row range (<= 100 per file)
- ``collect``: the per-block collectors the engine's scan feeds
- ``tables``: the in-memory store (records keyed by file identity)
- ``keys``: primary-key guesses
- ``estimates``: what the planner asks (planner/statistics.py's protocol)

Imports scan/ only; the engine wires the collectors into its scans and
injects the expression evaluation the estimates need (engine/statistics.py).
"""
