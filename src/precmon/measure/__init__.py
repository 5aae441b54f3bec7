"""precmon.measure layer (plain Python: never imports textual)."""
