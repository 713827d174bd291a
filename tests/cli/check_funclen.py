#!/usr/bin/python3
"""check_funclen.py - no function in src/ longer than LIMIT lines (docs/internals.md,
rule 1: functions under 120 lines; run by tests/cli/test_layers.sh).

    check_funclen.py ROOT [LIMIT]

A function is a line at column 0 ending its parameter list, the '{' line
that follows, and the body up to the next '}' at column 0 (the layout
clang-format gives every function here). Prints each longer one with its
length; exits 1 if there is any.
"""
import glob, os, re, sys

root = sys.argv[1]
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 120
os.chdir(root)
bad = count = 0
for path in sorted(glob.glob("src/**/*.c", recursive=True)):
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        if re.match(r"^[A-Za-z_].*\(", lines[i]) and not lines[i].rstrip().endswith(";"):
            j = i
            while j < len(lines) and j - i < 8 and lines[j] != "{" and not lines[j].endswith(";"):
                j += 1
            if j < len(lines) and lines[j] == "{":
                k = j
                while k < len(lines) and lines[k] != "}":
                    k += 1
                n = k - i + 1
                count += 1
                if n > limit:
                    bad += 1
                    print(f"FAIL: {path}:{i + 1}: {lines[i].split('(')[0]}: {n} lines (limit {limit})")
                i = k
        i += 1
print(f"functions checked: {count}, longer than {limit} lines: {bad}")
sys.exit(1 if bad or count == 0 else 0)
