"""readme_blocks.py - the commands and quoted blocks of README.md, for
tests/cli/test_readme.sh (the Python standard library only, so that the
test runs under `make check`).

    readme_blocks.py commands README
        one line per command, in README order: LINE<TAB>KIND<TAB>COMMAND
        KIND "block": a line of an indented (4-space) or ```-fenced code
        block (not ```python) that starts with a command; `\\` continuations
        joined, comments dropped, `a && b` split into a and b.
        KIND "inline": a `code span` in the text (a table's example column,
        a command named in a sentence) that starts with a command and has
        more than one word (one word is a program's or file's name).
        KIND "unknown": a line that is neither a command nor a comment in
        a code block that holds commands or says it does (```sh, ```bash,
        ...): the test fails on it, so the README cannot gain a command
        (`cd`, `pip install`, ...) that it does not recognise.
    readme_blocks.py block README PREFIX
        the ```-fenced block whose first line starts with PREFIX, verbatim
        (exit 1 if there is none)
    readme_blocks.py summary README OUTPUT
        checks the quoted summary (the indented block whose first line
        starts with "layer " and has "verdict") against OUTPUT, the
        command's real stdout: its runs of lines between "..." lines appear
        verbatim, each run contiguous, in order; without "..." at its start
        (end) the quote starts (ends) where the output does. Prints the
        quote's first line number; exit 1 with the first line that does not
        match.

A command starts with one of COMMANDS (after VAR=value assignments).
"""
import re
import sys

COMMANDS = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*"
                      r"(?:make|build/normcmp|normcmp|python3|scripts/\S+|xdg-open|parallel|man)"
                      r"(?:\s|$)")
FENCE = re.compile(r"^ {0,3}(```+|~~~+)\s*([^`\s]*)")


def blocks(lines):
    """[(kind, info, [(line_no, text)])] of the code blocks, and the text
    outside them as [(line_no, text)]. kind: "fenced" or "indented"."""
    out, prose = [], []
    i, n = 0, len(lines)
    prev_blank = True
    while i < n:
        m = FENCE.match(lines[i])
        if m:
            fence, info, body = m.group(1), m.group(2), []
            i += 1
            while i < n and not lines[i].lstrip().startswith(fence):
                body.append((i + 1, lines[i]))
                i += 1
            out.append(("fenced", info, body))
            i += 1
            prev_blank = True
            continue
        if prev_blank and (lines[i].startswith("    ") or lines[i].startswith("\t")):
            body = []
            while i < n and (lines[i].startswith("    ") or lines[i].startswith("\t") or
                             not lines[i].strip()):
                body.append((i + 1, lines[i][4:] if lines[i].startswith("    ") else
                             lines[i].lstrip("\t")))
                i += 1
            while body and not body[-1][1].strip():
                body.pop()
            out.append(("indented", "", body))
            prev_blank = True
            continue
        prose.append((i + 1, lines[i]))
        prev_blank = not lines[i].strip()
        i += 1
    return out, prose


def split_outside_quotes(s, sep):
    """s split at every sep that is not inside '...' or "..."."""
    parts, cur, q, i = [], "", None, 0
    while i < len(s):
        c = s[i]
        if q:
            q = None if c == q else q
        elif c in "'\"":
            q = c
        elif s.startswith(sep, i):
            parts.append(cur)
            cur, i = "", i + len(sep)
            continue
        cur += c
        i += 1
    parts.append(cur)
    return parts


def strip_comment(s):
    """s without a trailing ` # comment` (outside quotes)."""
    return split_outside_quotes(" " + s, " #")[0][1:].rstrip()


def block_commands(body, shell):
    """[(line_no, kind, command)] of one code block; shell: it says it is
    one (```sh), so every line is a command."""
    logical, cur, start = [], None, 0
    for no, text in body:
        if cur is None:
            cur, start = "", no
        t = text.strip() if cur else text.rstrip()
        if cur and t.startswith("#"):
            t = ""  # a comment line inside a continued command
        if t.endswith("\\"):
            cur += t[:-1].rstrip() + " "
            continue
        logical.append((start, cur + t))
        cur = None
    if cur:
        logical.append((start, cur.rstrip()))
    found = []
    for no, text in logical:
        s = strip_comment(text.strip())
        if not s or s.startswith("#"):
            continue
        for part in split_outside_quotes(s, "&&"):
            part = " ".join(part.split())
            found.append((no, "block" if COMMANDS.match(part) else "unknown", part))
    if not shell and not any(k == "block" for _, k, _ in found):
        return []  # output, a file layout, a licence: no commands
    return found


def inline_commands(prose):
    """[(line_no, "inline", command)] of the code spans outside code blocks."""
    text = "".join(f"{t}\n" for _, t in prose)
    starts = []  # character offset of each prose line
    off = 0
    for _, t in prose:
        starts.append(off)
        off += len(t) + 1
    found = []
    for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", text):
        span = " ".join(m.group(1).split())
        if len(span.split()) > 1 and COMMANDS.match(span):
            k = max(i for i, s in enumerate(starts) if s <= m.start())
            found.append((prose[k][0], "inline", span))
    return found


def commands(lines):
    code, prose = blocks(lines)
    found = []
    for kind, info, body in code:
        if kind == "fenced" and info not in ("", "sh", "shell", "bash", "console"):
            continue
        found += block_commands(body, info != "")
    found += inline_commands(prose)
    found.sort(key=lambda f: f[0])
    for no, kind, cmd in found:
        print(f"{no}\t{kind}\t{cmd}")


def fenced_block(lines, prefix):
    for kind, _, body in blocks(lines)[0]:
        if kind == "fenced" and body and body[0][1].startswith(prefix):
            sys.stdout.write("".join(f"{t}\n" for _, t in body))
            return 0
    print(f"readme_blocks.py: no ```-fenced block starts with {prefix!r}", file=sys.stderr)
    return 1


def summary(lines, output):
    quote = None
    for kind, _, body in blocks(lines)[0]:
        if kind == "indented" and body and body[0][1].startswith("layer ") and \
                "verdict" in body[0][1]:
            quote = body
            break
    if quote is None:
        print("README.md: no quoted summary (an indented block starting 'layer ... verdict')",
              file=sys.stderr)
        return 1
    out = open(output, encoding="utf-8").read().split("\n")
    if out and out[-1] == "":
        out.pop()
    runs, cur = [], []
    for no, t in quote:
        if t.strip() == "...":
            runs.append(cur)
            cur = []
        else:
            cur.append((no, t))
    runs.append(cur)
    pos = 0
    for r, run in enumerate(runs):
        if not run:
            continue
        anchored_start = r == 0
        anchored_end = r == len(runs) - 1
        texts = [t for _, t in run]
        hits = [i for i in range(pos, len(out) - len(texts) + 1) if out[i:i + len(texts)] == texts]
        if anchored_start:
            hits = [i for i in hits if i == 0]
        if anchored_end:
            hits = [i for i in hits if i + len(texts) == len(out)]
        if not hits:
            missing = [(no, t) for no, t in run if t not in out[pos:]]
            no, t = missing[0] if missing else run[0]
            where = ("is not in the output" if missing else
                     "and the lines after it up to '...' are not in the output as quoted "
                     "(contiguous, in order" +
                     (", from its first line" if anchored_start else "") +
                     (", to its last line" if anchored_end else "") + ")")
            print(f"README.md:{no}: the quoted summary line {t!r} {where}", file=sys.stderr)
            return 1
        pos = hits[0] + len(texts)
    print(quote[0][0])
    return 0


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    lines = open(argv[2], encoding="utf-8").read().split("\n")
    if argv[1] == "commands":
        commands(lines)
        return 0
    if argv[1] == "block" and len(argv) == 4:
        return fenced_block(lines, argv[3])
    if argv[1] == "summary" and len(argv) == 4:
        return summary(lines, argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
