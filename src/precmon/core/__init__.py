"""precmon.core: the facts every layer shares, owned once: the metric registry and its key names,
the results schema and its cell walker, the phase table, the plan-settings table and the cuts
(stopped, interrupted) with the words a variant keeps for them. Plain Python
that imports nothing of precmon but `precmon.untrusted` (to quote a value in an error safely).
"""
