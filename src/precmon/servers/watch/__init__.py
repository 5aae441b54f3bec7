"""A watched server: Prometheus /metrics parsing, the live token rate per kind
(live_rate.source_for) and the ServerSnapshot every reader shares.
"""
