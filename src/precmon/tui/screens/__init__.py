"""Modal screens: help (keys and docs/design.md §4 metric definitions) and the quit confirmation."""
