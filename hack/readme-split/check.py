#!/usr/bin/env python3
"""Checks that README.md's move to docs/ (issue 30) lost nothing.

Splits the README of revision BASE (default bdbd39b, before the move) into
units: each sentence of its prose (list items and paragraphs), each line of
its code blocks and tables, each heading. A unit is then looked up in the
new tree (README.md and docs/**/*.md except the generated docs/reference):
prose as a substring of a file's prose (whitespace collapsed, link targets
dropped, so a fixed or added link is the same sentence), code and table
lines as whole lines. Every unit must be found exactly as many times as the
old README held it, and a unit it held once in exactly one file. Prints
what is missing and what is duplicated, apart from the units changed.txt
lists as changed on purpose; exits 1 if anything is.

    python3 hack/readme-split/check.py [BASE]
"""
import glob, re, subprocess, sys
from collections import Counter

base = sys.argv[1] if len(sys.argv) > 1 else "bdbd39b"
old = subprocess.run(["git", "show", base + ":README.md"], capture_output=True, text=True, check=True).stdout

def norm(s):
    s = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", s)   # [text](target) -> text
    return re.sub(r"\s+", " ", s).strip()

ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s+")
SENT = re.compile(r"(?<=[.!?;:])\s+(?=[A-Z`*(\[\"])")

def parse(text):
    """Returns (prose units, line units, prose text) of a markdown text."""
    prose, lines, para, paras = [], [], [], []
    fence = False
    def flush():
        if para:
            joined = norm(" ".join(para))
            paras.append(joined)
            for s in SENT.split(joined):
                if len(s) >= 3:
                    prose.append(s)
            para.clear()
    for raw in text.split("\n"):
        l = raw.rstrip()
        if l.startswith("```"):
            flush()
            fence = not fence
            continue
        if fence or l.lstrip().startswith("|"):
            flush()
            if l.strip() and not re.fullmatch(r"[|\-: ]+", l.strip()):  # a table's separator is no fact
                lines.append(l.strip())
            continue
        if not l.strip():
            flush()
            continue
        if l.startswith("#"):
            flush()
            lines.append(norm(l.lstrip("#")))
            continue
        if ITEM.match(l):
            flush()
            l = ITEM.sub("", l)
        para.append(l)
    flush()
    return prose, lines, paras

old_prose, old_lines, _ = parse(old)
files = ["README.md"] + sorted(f for f in glob.glob("docs/**/*.md", recursive=True) if not f.startswith("docs/reference/"))
new = {}
for f in files:
    _, lines, paras = parse(open(f).read())
    new[f] = (Counter(lines), " \x00 ".join(paras))

here = __file__.rsplit("/", 1)[0]
intended = {l for l in open(here + "/changed.txt").read().split("\n") if l and not l.startswith("#")}
bad, changed = 0, 0
for kind, units in (("prose", old_prose), ("line", old_lines)):
    for unit, want in Counter(units).items():
        where = {}
        for f, (lines, text) in new.items():
            n = text.count(unit) if kind == "prose" else lines[unit]
            if n:
                where[f] = n
        total = sum(where.values())
        if unit in intended:
            changed += 1
            print(f"CHANGED ON PURPOSE {kind}: {unit}")
        elif total == 0:
            bad += 1
            print(f"MISSING {kind}: {unit}")
        elif total > want or (want == 1 and len(where) > 1):
            bad += 1
            print(f"DUPLICATED {kind} (old README: {want}x): {unit} -> {where}")
units = len(set(old_prose)) + len(set(old_lines))
print(f"{units} distinct units of the old README ({len(old_prose)} sentences, {len(old_lines)} lines), {changed} changed on purpose (changed.txt), {bad} missing or duplicated, in {len(files)} files")
sys.exit(1 if bad else 0)
