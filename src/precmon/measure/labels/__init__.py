"""What a variant really is, whatever its name says: a vLLM checkpoint's own config
(checkpoint.py), and the weights and compute path recorded on each variant (true_label.py); the
precision family a label or file type names is the core's (core/precision.py).
"""
