"""SQL text -> optimized plan.  Imports stats/ and scan/ (schemas)."""
