# test_layers.sh - the house stays layered (README "Layout") and its
# functions short (tests/cli/check_funclen.py):
#
#   cli (and main.c) -> report -> plot -> plan -> config -> analysis -> io
#   -> core -> util
#
# 1. every #include "dir/x.h" in src/ names a folder at the same level or
#    below the including file's folder;
# 2. a *_internal.h header is included only from its own folder;
# 3. no circle of headers including each other;
# 4. no circle of files using each other: from the symbols each object
#    file of the build defines and uses (nm), and from the code a header
#    carries (static inline functions, macros), which belongs to the file of
#    the header's name (x.h, x_internal.h: x.c), the file graph has no
#    cycle (a shared helper gets a home below both files instead).
# Known circles that other work is removing are listed in KNOWN below; the
# test fails when one of them is gone, so the list cannot go stale.
# 5. comments in src/, scripts/ and the Makefile cite what the repository
#    holds (docs/, the README), never documents outside it (BRIEF.md,
#    DESIGN.md) or an issue by number.
. tests/cli/lib.sh

KNOWN=""

py=tests/cli/check_layers.py

# the tree as it stands
run /usr/bin/python3 $py . "$BUILD" "$KNOWN"
cat "$T/.out"
expect_status 0

# the checker catches each kind of violation in a crafted tree
mk() { mkdir -p "$(dirname "$T/x/$1")"; printf '%b' "$2" >"$T/x/$1"; }
mk src/util/u.h '#ifndef U_H\n#define U_H\nint u(void);\n#endif\n'
mk src/plot/p.h '#ifndef P_H\n#define P_H\n#include "plot/q.h"\n#endif\n'
mk src/plot/q.h '#ifndef Q_H\n#define Q_H\n#include "plot/p.h"\n#endif\n'
mk src/core/a.c '#include "util/u.h"\nint b(void);\nint a(void);\nint a(void) { return b() + u(); }\n'
mk src/core/b.c 'int a(void);\nint b(void);\nint b(void) { return a(); }\n'
mk src/util/u.c '#include "plot/p.h"\n#include "core/x_internal.h"\nint u(void);\nint u(void) { return 0; }\n'
# a circle through a shared internal header: h.c calls k.c, and k.c uses
# the helper and the constant that h.c's internal header carries
mk src/core/h_internal.h '#ifndef H_I_H\n#define H_I_H\n#define H_MAX 4\nstatic inline int hh(int v) { return v < H_MAX ? v : H_MAX; }\nint k(void);\n#endif\n'
mk src/core/h.c '#include "core/h_internal.h"\nint h(void);\nint h(void) { return hh(k()); }\n'
mk src/core/k.c '#include "core/h_internal.h"\nint k(void) { return hh(3); }\n'
for f in core/a core/b util/u core/h core/k; do
    mkdir -p "$T/x/build/src/${f%/*}"
    cc -c -o "$T/x/build/src/$f.o" "$T/x/src/$f.c" -I"$T/x/src" 2>/dev/null ||
        cc -c -o "$T/x/build/src/$f.o" -x c /dev/null
done
run /usr/bin/python3 $py "$T/x" "$T/x/build" "core/a.c core/zzz.c"
expect_status 1
expect_out_has 'src/util/u.c: #include "plot/p.h": util/ must not include from plot/, a higher layer'
expect_out_has 'src/util/u.c: #include "core/x_internal.h": internal to core/'
expect_out_has 'headers include each other in a circle: plot/p.h plot/q.h'
expect_out_has 'files use each other in a circle: core/a.c core/b.c'
expect_out_has 'files use each other in a circle: core/h.c core/k.c (core/h.c uses k of core/k.c; core/k.c uses hh of core/h.c)'
expect_out_has 'the circle core/a.c core/zzz.c is gone'
# and no function grows past ~120 lines (a crafted 131-line one is caught)
run /usr/bin/python3 tests/cli/check_funclen.py .
cat "$T/.out"
expect_status 0
{ echo "int f(void)"; echo "{"; i=0; while [ $i -lt 128 ]; do echo "    g();"; i=$((i + 1)); done
  echo "}"; } >"$T/x/src/core/long.c"
run /usr/bin/python3 tests/cli/check_funclen.py "$T/x"
expect_status 1
expect_out_has "FAIL: src/core/long.c:1: int f: 131 lines (limit 120)"
# no citation of documents outside the repository, or of issues
cites() { grep -rnE 'BRIEF|DESIGN\.md|STYLE\.md|\.\./shared|[Ii]ssues? #?[0-9]+|the issue'"'"'s' "$@" 2>/dev/null; }
# tests/ and the formatter's file may name issues, but not documents outside the repository
# (the two test files that hold the patterns themselves excepted)
outside() {
    grep -rnE 'BRIEF|DESIGN\.md|STYLE\.md|\.\./shared' "$@" 2>/dev/null |
        grep -vE '^([^:]*/)?tests/cli/test_(layers|cli)\.sh:'
}
run cites src scripts Makefile
cp "$T/.out" "$T/cites"
cat "$T/cites"
check "src/, scripts/ and the Makefile cite docs/ and the README only: $(head -c 300 "$T/cites")" \
    test ! -s "$T/cites"
mk src/core/c.c '/* the norms (BRIEF.md "The objects"; issue 4) */\n'
run cites "$T/x/src"
expect_out_has 'src/core/c.c:1:/* the norms (BRIEF.md'
mk src/core/d.c '/* two-pass (STYLE.md section 6) */\n'
run cites "$T/x/src"
expect_out_has 'src/core/d.c:1:/* two-pass (STYLE.md'
run outside tests .clang-format docs README.md
cp "$T/.out" "$T/outside"
cat "$T/outside"
check "tests/, docs/, the README and .clang-format cite no document outside the repository: $(head -c 300 "$T/outside")" \
    test ! -s "$T/outside"
mkdir -p "$T/x/tests/unit"
printf '/* the worked example (BRIEF.md) */\n' >"$T/x/tests/unit/t.c"
run outside "$T/x/tests"
expect_out_has 'tests/unit/t.c:1:/* the worked example (BRIEF.md)'
done_tests
