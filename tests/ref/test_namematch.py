"""The scripts' name patterns (--match, --norm-kind; normcmp/namematch.py),
issue 24 item 5 on the Python side:

- against Python's `re` as the reference: 4000 random patterns of the
  subset (literals, ., classes with ranges, negation and \\d \\w \\s,
  groups, |, * + ? and bounds, ^ $, lazy quantifiers) on random names,
  every answer of Pattern.search equal to bool(re.search(...));
- the constructs outside the subset are refused with a one-line error
  naming them, and so are patterns too long or expanding too far;
- hostile patterns through the scripts themselves: the dump script's
  --match and --norm-kind and the swap test's --match, on names where
  Python's backtracking takes 2^40 steps or more, return (a child process
  given 120 s, which `re` would exceed by hours); a refused pattern exits
  2 with one line naming the option.
"""
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOP, Checker  # noqa: E402

sys.path.insert(0, os.path.join(TOP, "scripts"))

C = Checker("test_namematch")
PY = sys.executable or "/usr/bin/python3"
ALPHA = "ab.1_-Z"


def rand_class(r):
    parts = []
    for _ in range(r.randint(1, 3)):
        k = r.random()
        if k < 0.3:
            parts.append(r.choice(["\\d", "\\w", "\\s", "\\D", "\\W"]))
        elif k < 0.5:
            lo = r.choice("ab1")
            parts.append(lo + "-" + r.choice([c for c in "abz19" if c >= lo]))
        else:
            parts.append(r.choice(["a", "b", "\\.", "_", "1", "\\-"]))
    return "[" + ("^" if r.random() < 0.3 else "") + "".join(parts) + "]"


def rand_atom(r, depth):
    k = r.random()
    if k < 0.35:
        return r.choice(["a", "b", "1", "_", "Z"])
    if k < 0.45:
        return "."
    if k < 0.52:
        return r.choice(["\\.", "\\-", "\\d", "\\w", "\\W", "\\s"])
    if k < 0.62:
        return rand_class(r)
    if k < 0.8 and depth < 3:
        return "(" + ("?:" if r.random() < 0.3 else "") + rand_alt(r, depth + 1) + ")"
    return r.choice(["a", "b"])


def rand_quant(r):
    k = r.random()
    if k < 0.55:
        return ""
    q = r.choice(["*", "+", "?", "{2}", "{0,2}", "{1,}", "{,2}", "{1,3}"])
    return q + ("?" if r.random() < 0.15 else "")


def rand_cat(r, depth):
    s = "^" if r.random() < 0.12 else ""
    for _ in range(r.randint(0, 4)):
        s += rand_atom(r, depth) + rand_quant(r)
    return s + ("$" if r.random() < 0.15 else "")


def rand_alt(r, depth=0):
    return "|".join(rand_cat(r, depth) for _ in range(r.choice([1, 1, 1, 2, 3])))


def differential():
    r = random.Random(24)
    bad = []
    n = 0
    for _ in range(4000):
        p = rand_alt(r)
        try:
            ref = re.compile(p)
        except re.error:
            continue
        try:
            mine = namematch.Pattern(p)
        except namematch.PatternError as e:
            bad.append(f"{p!r} refused ({e}) but re takes it")
            continue
        for _ in range(6):
            name = "".join(r.choice(ALPHA) for _ in range(r.randint(0, 12)))
            n += 1
            if mine.search(name) != bool(ref.search(name)):
                bad.append(f"{p!r} on {name!r}: {mine.search(name)}, re says "
                           f"{bool(ref.search(name))}")
    C.ok(not bad, f"{len(bad)} of {n} answers differ from re: " + "; ".join(bad[:5]))
    C.ok(n > 15000, f"enough pairs compared ({n})")
    # the patterns the docs and tests use
    for p, name, want in ((r"^blocks\.1\.", "blocks.1.ln1", True),
                          (r"^blocks\.1\.", "blocks.10.ln1", False),
                          (r"ln(0[02468]|10)$", "ln04", True), (r"ln(0[02468]|10)$", "ln05", False),
                          (r"attn|mlp", "layers.3.mlp_norm", True), ("", "x", True),
                          (r"norm[12]$", "blocks.0.norm2", True)):
        C.ok(namematch.Pattern(p).search(name) == want, f"{p!r} on {name!r}: expected {want}")


def refusals():
    for p, what in (("(a)\\1", "\\1"), ("(?=a)", "(?"), ("(?<!a)b", "(?"), ("\\bword", "\\b"),
                    ("(?i)ln", "(?"), ("(?P<x>a)", "(?"), ("a*+", "possessive"),
                    ("(a{1,100}){1,100}", "automaton states"), ("a" * 1001, "more than 1000"),
                    ("[[:alpha:]]", "POSIX"), ("a{5,2}", "backwards"), ("[z-a]", "backwards"),
                    ("(ab", "missing )"), ("ab)", "unbalanced"), ("*a", "nothing to repeat"),
                    ("a{1001}", "above 1000"), ("\\", "lone"), ("\\A", "\\A"),
                    ("[ab", "missing ]")):
        try:
            namematch.Pattern(p)
            C.ok(False, f"{p[:40]!r}: accepted, expected refused ({what})")
        except namematch.PatternError as e:
            C.ok(what in str(e) and "\n" not in str(e), f"{p[:40]!r}: message {e} names {what!r}")
    # bounded expansions inside the limit are taken, and their program is that size
    p = namematch.Pattern("(.?){600}$")
    C.ok(len(p.prog) <= namematch.MAX_STATES + 2, f"(.?){{600}}$: {len(p.prog)} states")


HOSTILE = r'''
import sys
sys.path.insert(0, sys.argv[1])
from normcmp import dump, swaptest
name = "a" * 40 + "c"
long = "x" * 1000
a = dump.parse_args(["-o", "x.safetensors", "--model", "m.py:f", "--match", "(a*)*b",
                     "--norm-kind", "(a|a)*b=rmsnorm", "--norm-kind", "(.?){600}$=layernorm"],
                    need_model=False)
print(bool(a.match.search(name)), bool(a.norm_kind[0][0].search(name)),
      bool(a.norm_kind[1][0].search(long)))
s = swaptest.parse_args(["results", "--match", "(x+x+)+y"], need_model=False)
print(bool(s.match.search("x" * 40)))
'''


def through_scripts():
    try:
        p = subprocess.run([PY, "-c", HOSTILE, os.path.join(TOP, "scripts")], capture_output=True,
                           text=True, timeout=120)
        out, err, rc = p.stdout.split(), p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        out, err, rc = [], "did not return in 120 s", -1
    C.ok(rc == 0 and out == ["False", "False", "True", "False"],
         f"hostile --match / --norm-kind patterns on long names: exit {rc}, {out}, {err[-300:]}")
    for script, args in (("dump_activations.py", ["-o", "x.safetensors", "--model", "m.py:f"]),
                         ("swap_test.py", ["results", "--model", "m.py:f", "--labels", "m.py:f"])):
        for opt, val in (("--match", "(ln)\\1"), ("--norm-kind", "(?=x)=rmsnorm")):
            if opt == "--norm-kind" and script == "swap_test.py":
                continue
            p = subprocess.run([PY, os.path.join(TOP, "scripts", script), *args, opt, val],
                               capture_output=True, text=True, timeout=120)
            lines = p.stderr.strip().splitlines()
            C.ok(p.returncode == 2 and len(lines) == 1 and f"{script}: {opt}: " in lines[0],
                 f"{script} {opt} {val!r}: exit {p.returncode}, {p.stderr.strip()!r}")


def main():
    global namematch
    through_scripts()  # first: it needs nothing but the scripts' command lines
    try:
        from normcmp import namematch
    except ImportError as e:
        C.ok(False, f"normcmp.namematch: {e}")
        C.done()
    differential()
    refusals()
    C.done()


if __name__ == "__main__":
    main()
