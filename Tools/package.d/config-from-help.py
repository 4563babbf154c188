#!/usr/bin/env python3
"""Writes lyred.conf, the commented config file the lyred package installs, from lyred's own option
definitions (`lyred --experimental-dump-help`), so that it lists every option the binary has: each key is an
option without its dashes, shown with its help and its default, commented out.

Usage: lyred --experimental-dump-help | config-from-help.py > lyred.conf
"""
import json
import sys
import textwrap

# Options that only make sense on a command line, never in the file (lyred refuses them there).
COMMAND_LINE_ONLY = {"config", "check-config", "help", "version", "list-outputs"}

command = json.load(sys.stdin)["command"]
out = [
    "# lyred's settings. Each key is one of lyred's options without its dashes (man lyred): 'output-delay = 40'",
    "# is --output-delay 40. An option given on lyred's command line wins over the file.",
    "# A '#' starts a comment only at the start of a line; a value runs to the end of its line (write it in",
    "# double quotes to keep blanks at its ends). 'lyred --check-config' checks this file.",
    "#",
    "# This is the file of lyred.service; lyred@NAME.service (one receiver per sound card) reads",
    "# /etc/lyre/lyred-NAME.conf, which should set at least name, output and port (or port = 0).",
]
for argument in command["arguments"]:
    if argument["kind"] != "option" or not argument.get("shouldDisplay", True):
        continue
    key = argument["preferredName"]["name"]
    if argument["preferredName"]["kind"] != "long" or key in COMMAND_LINE_ONLY:
        continue
    out.append("")
    for line in textwrap.wrap(argument.get("abstract", ""), 100):
        out.append("# " + line)
    if argument.get("isRepeating"):
        out.append("# (repeatable: one line each)")
    value = argument.get("defaultValue")
    out.append(f"#{key} = {value}" if value not in (None, "") else f"#{key} =")
print("\n".join(out))
