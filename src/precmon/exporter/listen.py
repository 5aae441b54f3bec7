"""`--listen HOST:PORT`: parsed, and told apart as loopback or not.

The exporter has no authentication, so by default it listens on loopback only; any other
address is the user's explicit choice and earns a one-line warning (put it behind a proxy).
"""

from __future__ import annotations

import ipaddress

DEFAULT_LISTEN = "127.0.0.1:9464"  # 9464: the port OpenTelemetry's Prometheus exporter uses too
NO_AUTH_WARNING = (
    "precmon exporter: warning: listening on {addr}, which is not loopback; the exporter has no "
    "authentication or TLS: put it behind a reverse proxy or a firewall"
)


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT` or `[V6]:PORT` → (host, port). ValueError with the reason when it is not one."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"expected HOST:PORT, e.g. {DEFAULT_LISTEN}, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"an IPv6 address goes in brackets, e.g. [::1]:9464, got {text!r}")
    if not port_text.isascii() or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"expected a port 0-65535, got {port_text!r}")
    if not host or any(c.isspace() or not c.isprintable() for c in host):
        raise ValueError(f"expected a host name or address, got {host!r}")
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine (a name other than localhost counts as not)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
