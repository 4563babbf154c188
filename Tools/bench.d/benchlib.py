"""What the bench suites (and Tools/soak) share."""
import os
import subprocess
import sys
import time

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wait_for(path, text, timeout=10):
    """True once the file at `path` holds `text` (a daemon's log saying it is up), False after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path) and text in open(path, errors="replace").read():
            return True
        time.sleep(0.05)
    return False


HOSTS = set()


def host(number):
    """Host `number` of the test network (10.77.0.N), made on first use."""
    if number not in HOSTS:
        done = subprocess.run([os.path.join(TOOLS, "lib", "add-host.sh"), str(number)], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"bench: cannot add host {number}: {done.stderr.strip()}")
        HOSTS.add(number)
    return f"h{number}", f"10.77.0.{number}"
