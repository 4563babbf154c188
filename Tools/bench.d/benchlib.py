"""What the bench suites share."""
import os
import time


def wait_for(path, text, timeout=10):
    """True once the file at `path` holds `text` (a daemon's log saying it is up), False after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path) and text in open(path, errors="replace").read():
            return True
        time.sleep(0.05)
    return False
