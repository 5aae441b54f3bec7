"""Modal screens: help (keys and SPEC §4 metric definitions) and the quit confirmation."""
