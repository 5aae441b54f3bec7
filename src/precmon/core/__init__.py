"""precmon.core: the facts every layer shares, owned once: the metric registry and its key names,
the results schema and its cell walker, the phase table, the settings table, the cuts (stopped,
interrupted) with the words a variant keeps for them, and what both the bench and the report read
in a file (run statistics, precision families, concurrency figures, the answer, warning codes).
Plain Python that imports nothing of precmon but `precmon.untrusted`.
"""
