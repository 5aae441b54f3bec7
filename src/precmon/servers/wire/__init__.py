"""The wire under every protocol: HTTP with total deadlines, SSE and NDJSON streams, and readers of
untrusted fields.
"""
