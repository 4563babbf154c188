#!/usr/bin/env python3
"""An independent mDNS implementation (python-zeroconf, from PyPI) browsing for Lyre receivers.

Prints one JSON object per resolved instance: {"name", "port", "server" (the SRV target), "addresses", "txt"},
then exits after
SECONDS. Bound to 127.0.0.1 only: it is run inside the Tools/netns test network.
Usage: zeroconf-browse.py SECONDS
"""
import json
import sys
import time

from zeroconf import IPVersion, ServiceBrowser, Zeroconf

SERVICE = "_lyre._tcp.local."
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
seen = {}


class Listener:
    def add_service(self, zc, type_, name):
        info = zc.get_service_info(type_, name, timeout=3000)
        if info is None:
            return
        txt = {k.decode(errors="replace"): (v.decode(errors="replace") if v is not None else None)
               for k, v in info.properties.items()}
        seen[name] = {"name": name[: -len("." + SERVICE)], "port": info.port, "server": info.server,
                      "addresses": info.parsed_addresses(), "txt": txt}

    def update_service(self, zc, type_, name):
        self.add_service(zc, type_, name)

    def remove_service(self, zc, type_, name):
        seen.pop(name, None)


zc = Zeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
try:
    ServiceBrowser(zc, SERVICE, Listener())
    time.sleep(seconds)
finally:
    zc.close()
for entry in seen.values():
    print(json.dumps(entry, sort_keys=True))
