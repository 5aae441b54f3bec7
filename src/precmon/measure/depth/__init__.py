"""Context depth: decode and prefill on top of a filled context (the steps, their run, and the
server's slots erased between them).
"""
