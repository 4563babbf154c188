#!/usr/bin/env python3
"""An independent mDNS implementation (python-zeroconf, from PyPI) holding a `_lyre._tcp` name on the network.

Registers NAME (probing first, RFC 6762 §8) with the TXT strings given, prints "registered NAME" once its
announcements are out, and keeps answering for it until SIGTERM or SIGINT, when it withdraws it (goodbye
packets). Bound to 127.0.0.1 only: it is run inside the Tools/netns test network, where it is another host's
responder as far as avahi is concerned (its own sockets, its own records).
Usage: zeroconf-publish.py NAME PORT [KEY=VALUE...]
"""
import signal
import socket
import sys
import threading

from zeroconf import IPVersion, ServiceInfo, Zeroconf

if len(sys.argv) < 3:
    sys.exit("usage: zeroconf-publish.py NAME PORT [KEY=VALUE...]")
name, port = sys.argv[1], int(sys.argv[2])
properties = dict(pair.split("=", 1) for pair in sys.argv[3:])
info = ServiceInfo("_lyre._tcp.local.", f"{name}._lyre._tcp.local.", port=port, properties=properties,
                   server="zeroconf-holder.local.", addresses=[socket.inet_aton("127.0.0.1")])
stop = threading.Event()
# The test runner's children inherit a blocked signal mask: clear it, so that SIGTERM reaches the handler.
signal.pthread_sigmask(signal.SIG_SETMASK, [])
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
zc = Zeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
try:
    zc.register_service(info)  # probes, then announces; raises NonUniqueNameException if the name is held
    print(f"registered {name}", flush=True)
    stop.wait()
    zc.unregister_service(info)
finally:
    zc.close()
