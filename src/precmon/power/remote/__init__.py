"""Other machines' power: their exporters (precmon's, NVIDIA DCGM's) as power sources (`--power-from`)."""

from .exposition import DCGM, PRECMON, Exposition, ExpositionError, Reading, parse
from .node import NodeError, RemoteNode, open_nodes

__all__ = [
    "DCGM",
    "PRECMON",
    "Exposition",
    "ExpositionError",
    "Reading",
    "parse",
    "NodeError",
    "RemoteNode",
    "open_nodes",
]
