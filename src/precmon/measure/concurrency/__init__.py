"""Several streams at once: the level's run, the check of its streams, the curve over levels."""
