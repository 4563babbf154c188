"""What the bench suites (and Tools/soak) share."""
import os
import subprocess
import sys
import time

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """A process's CPU time so far, user and system (fields 14 and 15 of /proc/PID/stat), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def peak_rss_kib(pid):
    """A process's peak RSS so far (VmHWM), KiB; None when /proc does not say."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


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
