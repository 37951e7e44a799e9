"""Loopback-only hosts: aiortc made to offer 127.0.0.1 as an ICE candidate when nothing else would do."""

from __future__ import annotations

import aioice.ice as ice
import ifaddr


def has_external_ipv4() -> bool:
    return any(isinstance(ip.ip, str) and not ip.ip.startswith("127.")
               for adapter in ifaddr.get_adapters() for ip in adapter.ips)


def allow_loopback_ice() -> None:
    """Let aiortc offer 127.0.0.1 as a host candidate.

    aioice gathers host candidates from every interface address except 127.0.0.1, so on a machine whose
    only interface is loopback (a sandbox, a CI container) the server offers no candidate at all and ICE
    cannot connect, even to a browser on the same machine (which itself needs
    --allow-loopback-in-peer-connection). Only used when no other IPv4 address exists, or when asked.
    """
    if getattr(ice.get_host_addresses, "_voicelab_loopback", False):
        return
    original = ice.get_host_addresses

    def with_loopback(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        addresses = original(use_ipv4, use_ipv6)
        if use_ipv4 and "127.0.0.1" not in addresses:
            addresses.append("127.0.0.1")
        return addresses

    with_loopback._voicelab_loopback = True  # type: ignore[attr-defined]
    ice.get_host_addresses = with_loopback
