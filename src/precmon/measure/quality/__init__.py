"""The quality pass: teacher-forced next-token distributions from a server (fetch, fetch_openai),
the reference a baseline leaves, the score (KL, top-1, perplexity) and the run that ties them to
a variant.
"""
