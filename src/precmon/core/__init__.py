"""precmon.core: the facts every layer shares, owned once: the results schema, the metric registry,
the phase table and the plan-settings table. Plain Python that imports nothing else of precmon.
"""
