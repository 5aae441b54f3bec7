"""Measuring variants: `execute.run_variant` (the one way to measure a variant, for every front
end and both sweep orders), `fold.fold` (the one fold of events into a results document), sweep
files (spec.py), the runner, the results store (journal, rescue) and launched servers.
Plain Python: never imports textual.
"""
