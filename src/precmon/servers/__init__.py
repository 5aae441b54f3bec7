"""precmon.servers: one protocol class per server kind (`kinds.py` lists them), detection, `/metrics`,
launching; `live_rate.source_for` (the one kind switch for the live rate) and `snapshot.ServerSnapshot`
(what one poll of a server said: the TUI and the exporter read it). Plain Python: never imports textual.
"""
