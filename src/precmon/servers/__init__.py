"""precmon.servers: the kind registry (`kinds.py`), one protocol class per kind (`protocols/`) on a
shared wire (`wire/`), detection, launching, and a watched server (`watch/`: `/metrics`,
`live_rate.source_for`, `ServerSnapshot`). Plain Python: never imports textual.
"""
