"""Measuring one variant: the pure plan (plan.py), the executor that emits runs (bench.py), the
idempotent summary (summary.py), one timed request in its power window (request.py); quality/,
depth/, concurrency/ and trust/ hold those passes. Plain Python: never imports textual.
"""
