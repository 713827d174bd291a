"""Name patterns of the scripts' --match and --norm-kind options (and the
notebook's match= and norm_kind=): a subset of Python's regular
expressions, matched by a Thompson automaton, so that a pattern from
anyone (a shared command line, a config) takes time and memory linear in
the pattern's length and the name's, never exponential as Python's
backtracking `re` can (`(a*)*b` on "aaaa...": docs/dumping.md "Which
modules").

The subset (the same meaning as in `re`, searched anywhere in the name
unless anchored):

    abc       literal characters; \\. \\* \\\\ ... any escaped punctuation
    .         any character but a newline
    [a-z_] [^0-9]   classes: characters, ranges, \\d \\w \\s inside
    \\d \\D \\w \\W \\s \\S   digits, word characters, white space, and not
    ( ) (?: )  groups
    |         alternatives
    * + ?     repetition (a lazy *? +? ?? matches the same names)
    {m} {m,} {m,n} {,n}  bounded repetition, m and n at most 1000
    ^ $       the name's start and end

Not accepted (a one-line error names it): back-references, look-around,
\\b \\A \\Z and other escapes of letters, inline flags, named groups,
possessive quantifiers. A pattern is at most 1000 characters and may
expand to at most 2000 automaton states (`(a{1,100}){1,100}` is refused):
matching a name takes at most (states x name length) steps.
"""

MAX_PATTERN = 1000
MAX_REPEAT = 1000
MAX_STATES = 2000
_META = set("\\.[]()|*+?{}^$")
_CLASSES = {"d": str.isdecimal, "w": lambda c: c.isalnum() or c == "_", "s": str.isspace}


class PatternError(ValueError):
    pass


# ------------------------------------------------------------------ parsing
# AST: ("lit", pred) one character; ("cat", [n...]); ("alt", [n...]);
# ("rep", n, min, max or None); ("bol",); ("eol",); ("empty",)

class _Parser:
    def __init__(self, p):
        self.p, self.i = p, 0

    def fail(self, what, at=None):
        raise PatternError(f"{what} at offset {self.i if at is None else at}")

    def peek(self):
        return self.p[self.i] if self.i < len(self.p) else None

    def parse(self):
        n = self.alt()
        if self.i < len(self.p):
            self.fail("unbalanced )")
        return n

    def alt(self):
        items = [self.cat()]
        while self.peek() == "|":
            self.i += 1
            items.append(self.cat())
        return items[0] if len(items) == 1 else ("alt", items)

    def cat(self):
        items = []
        while self.peek() not in (None, "|", ")"):
            items.append(self.repeat(self.atom()))
        return ("cat", items) if items else ("empty",)

    def atom(self):
        c, at = self.p[self.i], self.i
        self.i += 1
        if c == "(":
            if self.p.startswith("?:", self.i):
                self.i += 2
            elif self.peek() == "?":
                self.fail("(? other than (?: (look-around, flags, named groups)", at)
            n = self.alt()
            if self.peek() != ")":
                self.fail("missing )", at)
            self.i += 1
            return n
        if c == "[":
            return ("lit", self.klass(at))
        if c == "\\":
            return ("lit", self.one(in_class=False))
        if c == ".":
            return ("lit", lambda ch: ch != "\n")
        if c == "^":
            return ("bol",)
        if c == "$":
            return ("eol",)
        if c in "*+?":
            self.fail(f"nothing to repeat before {c}", at)
        if c == "{" and self.bounds(peek_only=True):
            self.fail("nothing to repeat before {", at)
        if c == ")":
            self.fail("unbalanced )", at)
        return ("lit", lambda ch, c=c: ch == c)

    def escape(self, in_class):
        """The escape after a backslash: a one-character string (a literal)
        or a predicate (\\d \\w \\s and their negations)."""
        c = self.peek()
        if c is None:
            self.fail("a lone \\ at the end")
        self.i += 1
        if c.lower() in _CLASSES:
            f = _CLASSES[c.lower()]
            return f if c.islower() else (lambda ch, f=f: not f(ch))
        if c in "tnrfv":
            return {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v"}[c]
        if c.isalnum() or c == "_":
            self.fail(f"\\{c} (only \\d \\D \\w \\W \\s \\S \\t \\n and escaped punctuation)",
                      self.i - 2)
        return c

    def one(self, in_class):
        c = self.escape(in_class)
        return (lambda ch, c=c: ch == c) if isinstance(c, str) else c

    def class_atom(self):
        c = self.p[self.i]
        self.i += 1
        return self.escape(True) if c == "\\" else c

    def klass(self, at):
        neg = self.peek() == "^"
        self.i += neg
        items, first = [], True
        while True:
            c = self.peek()
            if c is None:
                self.fail("missing ]", at)
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[" and self.p.startswith(("[:", "[=", "[."), self.i):
                self.fail("POSIX classes [: :] (use \\d \\w \\s)")
            start = self.i
            lo = self.class_atom()
            if (isinstance(lo, str) and self.peek() == "-" and self.i + 1 < len(self.p)
                    and self.p[self.i + 1] != "]"):
                self.i += 1
                hi = self.class_atom()
                if not isinstance(hi, str):
                    self.fail("a class escape as the end of a range", start)
                if hi < lo:
                    self.fail(f"the range {lo}-{hi} runs backwards", start)
                items.append(lambda ch, lo=lo, hi=hi: lo <= ch <= hi)
            elif isinstance(lo, str):
                items.append(lambda ch, lo=lo: ch == lo)
            else:
                items.append(lo)
        if neg:
            return lambda ch: not any(f(ch) for f in items)
        return lambda ch: any(f(ch) for f in items)

    def bounds(self, peek_only=False):
        """{m}, {m,}, {m,n}, {,n} at self.i (after the {): (m, n or None),
        or None when it is not one (then { is a literal, as in re)."""
        j = self.i
        k = self.p.find("}", j)
        if k < 0:
            return None
        body = self.p[j:k]
        lo, comma, hi = body.partition(",")
        if not (lo.isdigit() or (comma and not lo)) or not (hi.isdigit() or not hi) \
                or not (lo or hi) or not body.isascii():
            return None
        if peek_only:
            return True
        m = int(lo) if lo else 0
        n = (int(hi) if hi else None) if comma else m
        if m > MAX_REPEAT or (n is not None and n > MAX_REPEAT):
            self.fail(f"a repetition bound above {MAX_REPEAT}")
        if n is not None and n < m:
            self.fail(f"the bounds {{{body}}} run backwards")
        self.i = k + 1
        return m, n

    def repeat(self, n):
        while True:
            c = self.peek()
            if c in ("*", "+", "?"):
                self.i += 1
                n = ("rep", n, 1 if c == "+" else 0, 1 if c == "?" else None)
            elif c == "{":
                self.i += 1
                b = self.bounds()
                if b is None:
                    self.i -= 1
                    return n
                n = ("rep", n, b[0], b[1])
            else:
                return n
            if self.peek() == "+":
                self.fail("a possessive quantifier")
            if self.peek() == "?":
                self.i += 1  # lazy: the same names match


def _size(n):
    k = n[0]
    if k == "cat":
        return sum(_size(x) for x in n[1])
    if k == "alt":
        return sum(_size(x) + 2 for x in n[1])
    if k == "rep":
        s, m, hi = _size(n[1]), n[2], n[3]
        return m * s + ((s + 2) if hi is None else (hi - m) * (s + 1))
    return 1


# ------------------------------------------------------------------ the automaton
# program: ("char", pred) | ("split", a, b) | ("jmp", a) | ("bol",) | ("eol",) | ("match",)

def _emit(n, prog):
    k = n[0]
    if k == "lit":
        prog.append(("char", n[1]))
    elif k in ("bol", "eol"):
        prog.append((k,))
    elif k == "cat":
        for x in n[1]:
            _emit(x, prog)
    elif k == "alt":
        jumps = []
        for x in n[1][:-1]:
            split = len(prog)
            prog.append(None)
            _emit(x, prog)
            jumps.append(len(prog))
            prog.append(None)
            prog[split] = ("split", split + 1, len(prog))
        _emit(n[1][-1], prog)
        for j in jumps:
            prog[j] = ("jmp", len(prog))
    elif k == "rep":
        x, m, hi = n[1], n[2], n[3]
        for _ in range(m):
            _emit(x, prog)
        if hi is None:
            split = len(prog)
            prog.append(None)
            _emit(x, prog)
            prog.append(("jmp", split))
            prog[split] = ("split", split + 1, len(prog))
        else:
            ends = []
            for _ in range(hi - m):
                ends.append(len(prog))
                prog.append(None)
                _emit(x, prog)
            for e in ends:
                prog[e] = ("split", e + 1, len(prog))


class Pattern:
    """A compiled name pattern: .search(name) -> bool, .pattern."""

    def __init__(self, pattern):
        if not isinstance(pattern, str):
            raise PatternError("expected a string")
        if len(pattern) > MAX_PATTERN:
            raise PatternError(f"{len(pattern)} characters, more than {MAX_PATTERN}")
        self.pattern = pattern
        ast = _Parser(pattern).parse()
        if _size(ast) > MAX_STATES:
            raise PatternError(f"expands to more than {MAX_STATES} automaton states (nested or "
                               "large repetition bounds)")
        self.prog = []
        _emit(ast, self.prog)
        self.prog.append(("match",))
        self._cache = {}

    def _closure(self, core, at_start, at_end):
        """The states reachable from core without reading: (character
        states, whether the match state is among them)."""
        key = (core, at_start, at_end)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        prog, seen, stack, chars, matched = self.prog, set(), list(core), [], False
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = prog[pc]
            k = op[0]
            if k == "char":
                chars.append(pc)
            elif k == "split":
                stack += (op[2], op[1])
            elif k == "jmp":
                stack.append(op[1])
            elif k == "bol":
                if at_start:
                    stack.append(pc + 1)
            elif k == "eol":
                if at_end:
                    stack.append(pc + 1)
            else:
                matched = True
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[key] = res = (tuple(chars), matched)
        return res

    def search(self, name):
        """Whether the pattern matches somewhere in name (re.search)."""
        core = frozenset((0,))
        n = len(name)
        for i, ch in enumerate(name):
            chars, matched = self._closure(core | {0}, i == 0, False)
            if matched:
                return True
            core = frozenset(pc + 1 for pc in chars if self.prog[pc][1](ch))
        return self._closure(core | {0}, n == 0, True)[1]


def compile_pattern(pattern, option):
    """Pattern(pattern), or a one-line Fail naming the option."""
    from .common import Fail
    try:
        return Pattern(pattern)
    except PatternError as e:
        raise Fail(f"{option}: {pattern[:80]!r}{'...' if len(pattern) > 80 else ''}: {e}; "
                   "a name pattern takes literals, ., [...], \\d \\w \\s, groups, |, * + ? "
                   "{m,n} and ^ $ (see --help)")
