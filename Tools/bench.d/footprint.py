#!/usr/bin/env python3
"""Tools/bench footprint: where lyred's and lyre play's memory goes, as shipped (issue 30).

Runs inside Tools/netns. A sender is paired with lyred (PIN pairing), then plays --seconds of music-like input
to it at the default latency: a session over TLS and SRTP, the configuration Lyre ships. It reads:

- /proc/PID/smaps_rollup of lyred idle (2 s after start, before any session) and while playing, and of
  `lyre play` while playing: RSS, private clean (this program's own file pages: its code), private dirty (what
  it wrote: heap, stacks, relocated data), and the peak (VmHWM);
- /proc/PID/smaps per mapping while playing: which file or anonymous region holds the RSS;
- page faults inside lyred's own executable (`perf record -e page-faults -d`, every fault), attributed to the
  module whose code or to the section whose data was touched. The kernel maps code in windows around a fault
  (fault-around, 64 KiB here), so a program's code RSS is about its faulting windows times 64 KiB, however
  little of each window runs: this says which modules cost windows.

--order FILE instead writes the link's order file (Tools/lib/shipped.order, read by Tools/lib/shipped.sh): it runs
the same session with readahead off and both programs evicted from the page cache, so that each page of code faults
on its own, and adds the functions first touched in each page, in the order they were touched. Each run finds the
functions that shared a page with those the link has moved since: run it until it adds few.

The programs measured are the shipped ones ($LYRE_BIN: release, static Swift runtime, stripped); the faults
are read from the same build before stripping ($LYRE_SYMBOLS), whose code is the same, for its symbols.
"""
import argparse
import bisect
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from benchlib import peak_rss_kib, rollup, wait_for
from streaming import BIN, TOOLS, pair

SYMBOLS = os.environ.get("LYRE_SYMBOLS", BIN)


def memory(pid):
    """rollup's RSS, private clean and private dirty now, and the peak RSS so far, KiB."""
    return dict(rollup(pid), peak=peak_rss_kib(pid))


def mappings(pid):
    """RSS and private dirty per mapped file (by name) or anonymous region, KiB, largest first."""
    rss, dirty = collections.Counter(), collections.Counter()
    name = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                name = os.path.basename(parts[5]) if len(parts) > 5 else "[anonymous]"
            elif parts[0] == "Rss:":
                rss[name] += int(parts[1])
            elif parts[0] == "Private_Dirty:":
                dirty[name] += int(parts[1])
    return [(n, r, dirty[n]) for n, r in rss.most_common()]


class Symbols:
    """The executable's sections and function symbols, to name the owner of an address in it."""

    def __init__(self, exe):
        self.sections = []
        for line in subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True, check=True).stdout.splitlines():
            m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
            if m and int(m.group(2), 16):
                self.sections.append((int(m.group(2), 16), int(m.group(3), 16), m.group(1)))
        symbols = []
        for line in subprocess.run(["nm", "-S", "--defined-only", exe], capture_output=True, text=True, check=True).stdout.splitlines():
            f = line.split(None, 3)
            if len(f) == 4 and f[2] in "tTwW":
                symbols.append((int(f[0], 16), int(f[1], 16), f[3]))
        if not symbols:
            sys.exit(f"bench: {exe} has no symbols; LYRE_SYMBOLS must name the build before stripping")
        symbols.sort()
        self.symbols = symbols
        self.starts = [s[0] for s in symbols]

    def function(self, address):
        """The name of the function whose code holds `address`, or None."""
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0 and address < self.symbols[i][0] + self.symbols[i][1]:
            return self.symbols[i][2]
        return None

    def owner(self, address):
        section = next((n for a, size, n in self.sections if a <= address < a + size), "?")
        if section != ".text":
            return section
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0:
            return ".text"
        name = self.symbols[i][2]
        m = re.match(r"_?\$s(\d+)([A-Za-z_][A-Za-z0-9_]*)", name)
        if m:  # a Swift symbol: $s, the module name's length, the module name
            return m.group(2)[: int(m.group(1))]
        for library in ("CNIOBoringSSL", "CCryptoBoringSSL"):
            if library in name:
                return library
        if name.startswith(("swift_", "_swift", "$s")):
            return "Swift runtime (C++)"
        return "C and C++ (other)"


def touched(perf_data, maps, exe):
    """The addresses inside `exe` (its virtual addresses, as its symbols have them) of the recorded page faults,
    in their order: the loader maps each segment at its virtual address plus one bias, that of the first mapping."""
    segments = []
    for line in maps:
        parts = line.split()
        if len(parts) >= 6 and os.path.basename(parts[5]) == os.path.basename(exe):
            start, end = (int(x, 16) for x in parts[0].split("-"))
            segments.append((start, end, int(parts[2], 16)))
    if not segments:
        sys.exit("bench: the executable is not in the recorded process's maps")
    base = min(start - offset for start, _, offset in segments)
    out = subprocess.run(["perf", "script", "-i", perf_data, "-F", "addr"], capture_output=True, text=True, check=True).stdout
    for word in out.split():
        address = int(word, 16)
        if any(start <= address < end for start, end, _ in segments):
            yield address - base


def faults(perf_data, maps, exe, symbols):
    """Faulting 4 KiB pages and 64 KiB windows inside `exe`, per owner."""
    pages, windows = collections.defaultdict(set), collections.defaultdict(set)
    for v in touched(perf_data, maps, exe):
        who = symbols.owner(v)
        pages[who].add(v >> 12)
        windows[who].add(v >> 16)
    return pages, windows


class Faults:
    """Records every page fault of a program with its address (`perf record -e page-faults -d`) into `path`."""

    def __init__(self, path):
        self.path = path

    def command(self, command):
        return ["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d", "-o", self.path, "--"] + command

    def pid(self, proc):
        """The program's pid: perf's child."""
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            return int(f.read().split()[0])

    def idle(self, pid):
        pass


class Calls:
    """Records every function a program runs (valgrind's callgrind, which runs it on a simulated CPU, some 50
    times slower) into `path`, with a dump where lyred's idle time ends (`callgrind_control --dump`), so that what
    it runs idle can go before what it runs playing. Page faults name the first function run in each page only;
    this names them all at once."""

    def __init__(self, path):
        self.path = path

    def command(self, command):
        return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.path}", "--dump-instr=no",
                "--compress-strings=no", "--compress-pos=no", "--demangle=no"] + command

    def pid(self, proc):
        return proc.pid  # valgrind runs the program in its own process

    def idle(self, pid):
        subprocess.run(["callgrind_control", "--dump=idle", str(pid)], check=True, capture_output=True)

    def functions(self, program):
        """The functions of `program` (an executable's file name) run, dump by dump, each in the order of its
        first cost line in its dump, each once."""
        dumps = []
        directory, name = os.path.split(self.path)
        for file in os.listdir(directory):
            if file.startswith(name):
                text = open(os.path.join(directory, file), errors="replace").read()
                part = re.search(r"^part: (\d+)", text, re.M)
                dumps.append((int(part.group(1)) if part else 0, text))
        if not dumps:
            sys.exit(f"bench: callgrind wrote no profile at {self.path}")
        seen, names = set(), []
        for _, text in sorted(dumps):
            obj = None
            for line in text.splitlines():
                if line.startswith("ob="):
                    obj = os.path.basename(line[3:].strip())
                elif line.startswith("fn=") and obj == program:
                    fn = line[3:].strip()
                    if fn not in seen and not fn.startswith("0x"):
                        seen.add(fn)
                        names.append(fn)
        return names


def session(bin_dir, work, music, sender_state, tag, seconds, recorder=None, sender_recorder=None, sender_bin=BIN):
    """lyred from bin_dir, idle then playing from the paired sender (lyre play from sender_bin), each run by its
    recorder when it has one: (idle, playing, lyre play, mappings, lyred's maps, lyre play's maps)."""
    log = os.path.join(work, f"lyred-{tag}.log")
    command = [os.path.join(bin_dir, "lyred"), "--access", "open", "--name", "Bench", "--port", "7790",
               "--state-dir", os.path.join(work, "state"), "--output", "wav:" + os.path.join(work, "out.wav"), "--mpris", "off",
               "--control-socket", os.path.join(work, f"{tag}.sock")]
    proc = subprocess.Popen(recorder.command(command) if recorder else command, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    pid = proc.pid
    try:
        if not wait_for(log, "advertised as", timeout=10 if recorder is None else 120):
            sys.exit(f"bench: lyred did not start; see {log}")
        pid = recorder.pid(proc) if recorder else proc.pid
        time.sleep(2)
        idle = memory(pid)
        if recorder:
            recorder.idle(pid)
        env = dict(os.environ, XDG_STATE_HOME=sender_state, XDG_CONFIG_HOME=sender_state)
        play_command = [os.path.join(sender_bin, "lyre"), "play", music, "--host", "127.0.0.1:7790"]
        play = subprocess.Popen(sender_recorder.command(play_command) if sender_recorder else play_command,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        time.sleep(min(6, seconds - 1))
        play_pid = sender_recorder.pid(play) if sender_recorder else play.pid
        playing, sender, per_mapping = memory(pid), memory(play_pid), mappings(pid)
        with open(f"/proc/{pid}/maps") as f:
            maps = f.readlines()
        with open(f"/proc/{play_pid}/maps") as f:
            sender_maps = f.readlines()
        if play.wait(seconds + 30) != 0:
            sys.exit(f"bench: lyre play failed: {play.stderr.read().decode()}")
        if "TLS and SRTP" not in open(log).read():
            sys.exit("bench: the paired session was not encrypted")
        playing["peak"] = peak_rss_kib(pid)
        return idle, playing, sender, per_mapping, maps, sender_maps
    finally:
        os.kill(pid, 15)  # lyred (under perf, perf ends with it)
        proc.wait(60)


class ReadaheadOff:
    """The block device under `path` reads no page ahead while inside: each page touched then faults on its own,
    and the kernel's fault-around (which maps the cached neighbours of a faulting page) finds none cached."""

    def __init__(self, path):
        st = os.stat(path)
        block = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        queue = os.path.join(block, "queue")
        if not os.path.isdir(queue):  # a partition: its disk's queue
            queue = os.path.join(block, "..", "queue")
        self.knob = os.path.join(queue, "read_ahead_kb")

    def __enter__(self):
        with open(self.knob) as f:
            self.saved = f.read().strip()
        with open(self.knob, "w") as f:
            f.write("0")

    def __exit__(self, *_):
        with open(self.knob, "w") as f:
            f.write(self.saved)


def evict(path):
    """Drops a file's pages from the page cache (none is mapped: the program is not running)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def whole_section_functions():
    """The functions of the link's inputs (the build's objects, the toolchain's static archives) that lie in an
    object's one plain .text section rather than a section of their own: an order file that names one moves that
    whole section, which the linker cannot split (libswiftCore's Swift.o keeps 1.6 MB so), into the code that runs,
    and spreads it over megabytes that never run. The order file leaves them out; they stay where they are."""
    info = json.loads(subprocess.run(["swift", "-print-target-info"], capture_output=True, text=True, check=True).stdout)
    static = os.path.join(os.path.dirname(info["paths"]["runtimeResourcePath"]), "swift_static", "linux")
    inputs = glob.glob(os.path.join(SYMBOLS, "*.build", "*.o")) + glob.glob(os.path.join(static, "*.a"))
    names = set()
    for path in inputs:
        for line in subprocess.run(["objdump", "-t", path], capture_output=True, text=True).stdout.splitlines():
            left, tab, right = line.partition("\t")  # ADDRESS FLAGS SECTION<tab>SIZE NAME
            if tab and left.split()[-1] == ".text" and " F " in left and len(right.split(None, 1)) == 2:
                names.add(right.split(None, 1)[1].strip())
    return names


LYRE_PLAY_ALONE = "# lyre play alone"  # the order file's marker line; lld reads no line that starts with #


def write_order(path, work, music, sender_state, seconds):
    """Adds to the order file at `path` the functions lyred (idle, then playing a paired session) and lyre play
    touch that it lacks, in the order they were first touched: lyred's above the marker line, those only lyre play
    runs below it, so that each program's code lies together (one link serves both). Each page of their code faults
    on its own here (readahead off, the programs evicted from the page cache), so each fault names the first
    function touched in its page; the others in that page show up in the next round, once the link has moved the
    named ones. A function below the marker that lyred turns out to run moves above it."""
    lines = [line.strip() for line in open(path)] if os.path.exists(path) else []
    cut = lines.index(LYRE_PLAY_ALONE) if LYRE_PLAY_ALONE in lines else len(lines)
    parts = {"lyred": lines[:cut], "lyre": lines[cut + 1:]}
    lyred_data, lyre_data = os.path.join(work, "order-lyred.data"), os.path.join(work, "order-lyre.data")
    for program in ("lyred", "lyre"):
        evict(os.path.join(BIN, program))
    with ReadaheadOff(os.path.join(BIN, "lyred")):
        _, playing, sender, _, maps, sender_maps = session(BIN, work, music, sender_state, "order", seconds,
                                                           Faults(lyred_data), Faults(lyre_data))
    added = {"lyred": 0, "lyre": 0}
    moved = set()
    lyred_set, lyre_set = set(parts["lyred"]), set(parts["lyre"])
    for program, data, program_maps in (("lyred", lyred_data, maps), ("lyre", lyre_data, sender_maps)):
        symbols = Symbols(os.path.join(SYMBOLS, program))
        for v in touched(data, program_maps, os.path.join(BIN, program)):
            name = symbols.function(v)
            if not name or name in lyred_set:
                continue
            if program == "lyred":
                if name in lyre_set:  # lyred runs a function found first for lyre play
                    moved.add(name)
                    lyre_set.discard(name)
                else:
                    added["lyred"] += 1
                lyred_set.add(name)
                parts["lyred"].append(name)
            elif name not in lyre_set:
                added["lyre"] += 1
                lyre_set.add(name)
                parts["lyre"].append(name)
    parts["lyre"] = [name for name in parts["lyre"] if name not in moved]
    whole = whole_section_functions()
    dropped = sum(name in whole for name in parts["lyred"] + parts["lyre"])
    parts = {program: [name for name in names if name not in whole] for program, names in parts.items()}
    with open(path, "w") as f:
        f.writelines(name + "\n" for name in parts["lyred"] + [LYRE_PLAY_ALONE] + parts["lyre"])
    print(f"{path}: {len(lines) - (cut < len(lines))} functions kept, {added['lyred']} added for lyred and "
          f"{added['lyre']} for lyre play alone, {len(moved)} moved up to lyred's (lyred playing: RSS {playing['Rss']} KiB, "
          f"lyre play: {sender['Rss']} KiB, with each page of code faulting on its own); {dropped} left out that lie in "
          f"a whole section")


def write_order_from_calls(path, work, music, sender_state, seconds):
    """Writes the order file at `path` anew from every function lyred runs (idle, then playing a paired
    session) and lyre play runs, as callgrind counts them (`Calls`): lyred's, idle first, above the marker line,
    those only lyre play runs below it. Each program runs under valgrind in a session of its own, from the build
    before stripping (the same code, with its symbols), the other natively."""
    lyred_calls, lyre_calls = Calls(os.path.join(work, "calls-lyred", "out")), Calls(os.path.join(work, "calls-lyre", "out"))
    for calls in (lyred_calls, lyre_calls):
        os.makedirs(os.path.dirname(calls.path))
    # The programs with their symbols and without their DWARF, which valgrind 3.19 cannot read (DWARF 5 forms).
    symbols = os.path.join(work, "symbols")
    os.makedirs(symbols)
    for program in ("lyred", "lyre"):
        subprocess.run(["objcopy", "--strip-debug", os.path.join(SYMBOLS, program), os.path.join(symbols, program)], check=True)
    session(symbols, work, music, sender_state, "calls-lyred", seconds, recorder=lyred_calls)
    session(BIN, work, music, sender_state, "calls-lyre", seconds, sender_recorder=lyre_calls, sender_bin=symbols)
    whole = whole_section_functions()
    lyred = [name for name in lyred_calls.functions("lyred") if name not in whole]
    known = set(lyred)
    lyre = [name for name in lyre_calls.functions("lyre") if name not in known and name not in whole]
    with open(path, "w") as f:
        f.writelines(name + "\n" for name in lyred + [LYRE_PLAY_ALONE] + lyre)
    print(f"{path}: written anew from callgrind: {len(lyred)} functions lyred runs, {len(lyre)} more that lyre play runs "
          f"(those in a whole section left out)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--top", type=int, default=12, help="mappings and owners to list")
    ap.add_argument("--order", metavar="FILE", help="instead, record the functions that lyred and lyre play first touch, "
                    "each page of code faulting on its own, and add those FILE lacks to its end (the link's "
                    "--symbol-ordering-file, Tools/lib/shipped.order)")
    ap.add_argument("--calls", action="store_true", help="with --order: write the file anew from every function each "
                    "program runs, as valgrind's callgrind counts them, instead of adding the first function of each page")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lyre-bench-footprint-")
    music = os.path.join(work, "music.wav")
    subprocess.run([sys.executable, os.path.join(TOOLS, "peers", "audio.py"), "sweep", music, "--signal", "music",
                    "--seconds", str(a.seconds)], check=True)
    sender_state = tempfile.mkdtemp(prefix="sender-", dir=work)
    pair(work, sender_state)
    if a.order and a.calls:
        return write_order_from_calls(a.order, work, music, sender_state, a.seconds)
    if a.order:
        return write_order(a.order, work, music, sender_state, a.seconds)
    idle, playing, sender, per_mapping, _, _ = session(BIN, work, music, sender_state, "shipped", a.seconds)
    perf_data = os.path.join(work, "faults.data")
    _, _, _, _, maps, _ = session(SYMBOLS, work, music, sender_state, "symbols", a.seconds, Faults(perf_data))
    exe = os.path.join(SYMBOLS, "lyred")
    pages, windows = faults(perf_data, maps, exe, Symbols(exe))

    print(f"\nlyred and lyre play as shipped ({BIN}), a paired session (TLS and SRTP), {a.seconds:g} s of music at 250 ms")
    print(f"  {'KiB':28} {'RSS':>8} {'private clean':>14} {'private dirty':>14} {'peak RSS':>9}")
    for name, r in (("lyred, idle", idle), ("lyred, playing", playing), ("lyre play (WAV), playing", sender)):
        print(f"  {name:28} {r['Rss']:8} {r['Private_Clean']:14} {r['Private_Dirty']:14} {r['peak']:9}")
    print(f"\nlyred's RSS per mapping while playing, KiB (top {a.top})")
    for name, r, d in per_mapping[: a.top]:
        print(f"  {r:7} (dirty {d:5})  {name}")
    total_windows = len(set().union(*windows.values())) if windows else 0
    total_pages = sum(len(p) for p in pages.values())
    print(f"\npage faults in lyred's executable, start to end of the session: {total_pages} pages first touched, "
          f"{total_windows} distinct 64 KiB windows ({total_windows * 64} KiB); by owner (top {a.top}):")
    for who, p in sorted(windows.items(), key=lambda kv: -len(kv[1]))[: a.top]:
        print(f"  {len(p):4} windows {len(pages[who]):5} pages  {who}")
    print(f"\nreproduce: Tools/bench footprint --seconds {a.seconds:g}")


if __name__ == "__main__":
    main()
