"""precmon: what a numeric precision really costs and buys, measured on your own hardware."""

__version__ = "0.1.0"
