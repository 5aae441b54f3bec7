"""The test bed: a real llama.cpp server built from source and synthetic GGUF models.

Used by `precmon demo`, the integration tests, CI and the GPU proof script. Nothing here
imports textual; everything prints its progress to stderr so a long first build is never
silent.
"""
