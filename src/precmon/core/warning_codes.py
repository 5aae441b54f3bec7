"""Warning codes that a layer above `measure` looks for in a variant's `warnings`.

A variant's `warnings` are one-line strings, each starting with a code (docs/design.md §8; the
full list is `measure/trust/validity.py CODES`). The check that raises a code lives in measure;
a code is named here when the report (or another reader of results files) recognises it, so the
reader and the writer share one spelling without the report importing measure.
"""

from __future__ import annotations

#: FP4 weights that ran through a fallback kernel (int8 dot products, not FP4 hardware):
#: measure/labels/true_label.py raises it, the report's "What ran" marks the variant.
FALLBACK_CODE = "fallback-kernel:"
#: A node of a measurement over several machines (`--power-from`) that gave no power for a window:
#: measure/nodes.py raises it, the report's node lines count it.
NODE_MISSING = "node-missing:"
