"""precmon.servers layer (plain Python: never imports textual)."""
