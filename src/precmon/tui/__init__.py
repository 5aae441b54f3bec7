"""precmon.tui: the Textual application (the only layer that imports textual)."""
