"""Sketches, samples, synopses, key guesses and the metadata store (later issues)."""
