"""precmon.sweep layer (plain Python: never imports textual)."""
