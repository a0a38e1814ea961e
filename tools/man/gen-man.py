#!/usr/bin/env python3
"""Write man pages for the nerve command from its own help text:
nerve.1 (the verb list of `nerve help`) and nerve-VERB.1 per verb (its
`nerve VERB --help`), so that the pages say what --help says.

usage: gen-man.py NERVE OUTDIR [--external]

Without --external only the built-in verbs get pages (what the build
installs); with it also the external nerve-VERB programs `nerve help`
lists (e.g. the Python tools, once installed). Standard library only."""

import os
import re
import subprocess
import sys


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    return p.stdout if p.returncode == 0 else ""


def esc(line):
    line = line.replace("\\", "\\e")
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def page(name, summary, usage, body, version):
    out = ['.TH %s 1 "" "nerve %s" "nerve manual"' % (name.upper(), version),
           ".SH NAME", "%s \\- %s" % (esc(name), esc(summary)),
           ".SH SYNOPSIS", ".nf"]
    out += [esc(u) for u in usage]
    out += [".fi", ".SH DESCRIPTION", ".nf"]
    out += [esc(b) for b in body]
    out += [".fi", ".SH SEE ALSO"]
    out.append("nerve(1)" if name != "nerve" else "nerve-VERB(1) for each verb listed above")
    return "\n".join(out) + "\n"


def split_help(text):
    """usage lines (the first, and continuation lines indented to line up)
    and the rest."""
    lines = text.rstrip("\n").splitlines()
    usage = []
    i = 0
    while i < len(lines) and (i == 0 or lines[i].startswith("   ")):
        usage.append(re.sub(r"^usage: ", "", lines[i]))
        i += 1
    return usage, lines[i:]


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    nerve, outdir = args
    external = "--external" in argv
    os.makedirs(outdir, exist_ok=True)
    version = run(nerve, "--version").split()[1] if run(nerve, "--version") else "?"
    top = run(nerve, "help")
    verbs, section = [], None
    for line in top.splitlines():
        if line.startswith("verbs:"):
            section = "builtin"
        elif line.startswith("external verbs"):
            section = "external"
        elif line.startswith("  ") and section and "(not installed" not in line:
            parts = line.split(None, 1)
            if section == "builtin" or external:
                verbs.append((parts[0], parts[1] if len(parts) > 1 else "", section))
    if not verbs:
        print("gen-man.py: %s help listed no verbs" % nerve, file=sys.stderr)
        return 1
    # nerve.1 lists every verb with its line, external ones included (their
    # lines come from one table in tools/cmd/help.c); pages per external
    # verb are written only with --external.
    shown = re.sub(r" \(not installed: [^)]*\)", "", top)
    with open(os.path.join(outdir, "nerve.1"), "w") as f:
        f.write(page("nerve", "real-time IPC channels in shared memory",
                     ["nerve VERB [ARGS]", "nerve VERB --help"], shown.splitlines()[1:], version))
    for verb, summary, section in verbs:
        text = run(nerve, verb, "--help")
        if not text:
            print("gen-man.py: %s %s --help failed" % (nerve, verb), file=sys.stderr)
            return 1
        if section == "external" and not summary:
            m = re.search(r"\n\n(.+?)(\n\n|$)", text, re.S)
            summary = " ".join(m.group(1).split())[:80] if m else verb
        usage, body = split_help(text)
        with open(os.path.join(outdir, "nerve-%s.1" % verb), "w") as f:
            f.write(page("nerve-" + verb, summary, usage, body, version))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
