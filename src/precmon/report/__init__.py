"""precmon.report layer (plain Python: never imports textual)."""
