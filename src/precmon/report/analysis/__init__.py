"""What the report computes from a results document beside the table, one section per module:
advice, roofline, energy, quality, KV cache, concurrency, environment differences, fleet and compare."""
