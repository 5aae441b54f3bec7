"""Whether a measurement can be trusted: the host's CPU around each run (probe), the server's own
timing beside precmon's, the warnings (validity) and the host fingerprint.
"""
