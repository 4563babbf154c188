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


def rollup(pid):
    """A process's memory now from /proc/PID/smaps_rollup, KiB: Rss, Private_Clean (its own file pages, such as its
    code) and Private_Dirty (the pages it wrote that no other process shares, which the kernel cannot drop)."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if parts[0] in ("Rss:", "Private_Clean:", "Private_Dirty:"):
                fields[parts[0][:-1]] = int(parts[1])
    return fields


def private_dirty_kib(pid):
    """A process's private dirty memory now, KiB (see rollup)."""
    return rollup(pid)["Private_Dirty"]


def threads(pid):
    """Each thread of process pid so far, {tid: (wake-ups, CPU ns)}: wake-ups are its voluntary (woken from a
    wait) and involuntary context switches (/proc/PID/task/TID/status), CPU its time on a CPU from the
    scheduler (schedstat, ns, where stat's ticks are 10 ms: too coarse for an idle daemon's 0.1 %)."""
    counts = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                woken = sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                counts[task] = (woken, int(f.read().split()[0]))
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return counts


def threads_since(pid, before):
    """Wake-ups and CPU seconds of process pid since `before` (from `threads`), over the threads alive now; a
    thread that ended in between is left out (the start-up's pool threads end in its first seconds)."""
    now = threads(pid)
    woken = sum(w - before.get(t, (0, 0))[0] for t, (w, _) in now.items())
    cpu = sum(ns - before.get(t, (0, 0))[1] for t, (_, ns) in now.items())
    return woken, cpu / 1e9


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
