#!/bin/sh
# Run the libFuzzer targets tests/fuzz/fuzz_<target>.c (npy, safetensors,
# config, index, shard_report, sharded) for SECONDS each (default 60; what
# `make fuzz` runs).
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]
#   FUZZ_JOBS=2 scripts/fuzz.sh 600        run up to 2 targets at a time
#   FUZZ_ARGS="-max_len=65536" scripts/fuzz.sh 60 config
#
# Builds each target with clang (-fsanitize=fuzzer,address,undefined) into
# build/fuzz/, the library sources compiled into it. Each run starts from
# the committed seeds (tests/fuzz/corpus/<target>/, read only) and a working
# corpus build/fuzz/corpus/<target>/ that keeps what libFuzzer finds across
# runs; the committed corpus never grows by itself. To keep new coverage,
# merge by hand (and commit a small number of small files):
#
#   build/fuzz/fuzz_npy -merge=1 tests/fuzz/corpus/npy build/fuzz/corpus/npy
#
# A crash, leak, timeout or out-of-memory input is copied to
# tests/fuzz/corpus/<target>/ (as libFuzzer names it, crash-<sha1> ...), so
# `make test` replays it through the plain build from then on; fix the
# parser, then commit the file. Prints libFuzzer's final statistics per
# target (executions, coverage, corpus); exit status 1 if anything was found.
set -eu
cd "$(dirname "$0")/.."

seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-npy safetensors config index shard_report sharded}
case "$seconds" in '' | *[!0-9]*)
    echo "fuzz.sh: SECONDS must be a whole number, found '$seconds'" >&2
    exit 2
    ;;
esac

CC=${FUZZ_CC:-clang}
command -v "$CC" >/dev/null 2>&1 || {
    echo "fuzz.sh: $CC not found (scripts/deps.sh fuzz installs clang)" >&2
    exit 1
}
PKGS="libpng libcjson openblas cairo"
# OpenBLAS: the serial build, as the Makefile links it (see there)
multiarch=$($CC -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
BLAS_SERIAL=/usr/lib/$multiarch/openblas-serial
PKG_CONFIG_PATH=$BLAS_SERIAL/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
# shellcheck disable=SC2086 # PKGS is a list
CFLAGS="-std=c11 -D_GNU_SOURCE -pthread -g -O1 -fno-omit-frame-pointer $SAN -Isrc \
$(pkg-config --cflags $PKGS)"
# shellcheck disable=SC2086
LIBS="$(pkg-config --libs $PKGS) -Wl,-rpath,$BLAS_SERIAL -lm -pthread"
OUT=build/fuzz
mkdir -p "$OUT/obj"

# ---- build: the library once (instrumented for coverage), then each target
# an object is stale when its source, any header or this script is newer
objs=""
for src in src/util/*.c src/io/*.c src/core/*.c src/analysis/*.c src/plot/*.c src/report/*.c src/config/*.c src/plan/*.c; do
    obj="$OUT/obj/$(echo "$src" | tr / _ | sed 's/\.c$/.o/')"
    objs="$objs $obj"
    if [ ! -f "$obj" ] || [ -n "$(find "$src" src/*/*.h "$0" -newer "$obj" 2>/dev/null)" ]; then
        printf '%s %s\n' "$src" "$obj"
    fi
done >"$OUT/stale"
if [ -s "$OUT/stale" ]; then
    echo "fuzz.sh: compiling $(wc -l <"$OUT/stale") library sources with $CC"
    # shellcheck disable=SC2086
    xargs -P "$(nproc 2>/dev/null || echo 2)" -L 1 sh -c \
        "$CC $CFLAGS -fsanitize=fuzzer-no-link -c \"\$0\" -o \"\$1\" || exit 255" <"$OUT/stale"
fi
for t in $targets; do
    [ -f "tests/fuzz/fuzz_$t.c" ] || {
        echo "fuzz.sh: no target tests/fuzz/fuzz_$t.c" >&2
        exit 2
    }
    echo "fuzz.sh: linking $OUT/fuzz_$t"
    # shellcheck disable=SC2086
    $CC $CFLAGS -fsanitize=fuzzer -o "$OUT/fuzz_$t" "tests/fuzz/fuzz_$t.c" $objs $LIBS
done

# ---- dictionaries: the tokens of each format
cat >"$OUT/npy.dict" <<'EOF'
"\x93NUMPY"
"\x01\x00"
"\x02\x00"
"\x03\x00"
"{'descr': "
"'descr'"
"'fortran_order'"
"'shape'"
"\"descr\""
"\"fortran_order\""
"\"shape\""
"True"
"False"
"'<f4'"
"'<f2'"
"'<f8'"
"'<V2'"
"'|V2'"
"'>f4'"
"'bfloat16'"
"(3, 4)"
"(5,)"
"()"
", }"
"18446744073709551615"
"18446744073709551616"
"4611686018427387904"
EOF
cat >"$OUT/safetensors.dict" <<'EOF'
"\"dtype\""
"\"shape\""
"\"data_offsets\""
"\"__metadata__\""
"\"F32\""
"\"F16\""
"\"BF16\""
"\"F64\""
"\"BOOL\""
"\"U8\""
"\"I64\""
"\"F8_E4M3\""
"[0, 16]"
"[]"
"{}"
"9007199254740991"
"9007199254740992"
"1e308"
"-0"
"1.0"
"\\u0000"
"\\ud800"
"\\\""
EOF
cat >"$OUT/config.dict" <<'EOF'
"\"name\""
"\"output\""
"\"norm\""
"\"eps\""
"\"fits\""
"\"amplitude\""
"\"bins\""
"\"max_exact_points\""
"\"sample_tokens\""
"\"seed\""
"\"threads\""
"\"jacobian\""
"\"figures\""
"\"sweep\""
"\"layers\""
"\"file\""
"\"synth\""
"\"tensor\""
"\"label\""
"\"output\""
"\"weight\""
"\"bias\""
"\"grad_output\""
"\"experiment\""
"\"preset\""
"\"tokens\""
"\"dim\""
"\"scale_median\""
"\"scale_spread\""
"\"outliers\""
"\"outlier_mag\""
"\"outlier_spread\""
"\"nu\""
"\"offset_std\""
"\"affine\""
"\"enabled\""
"\"probes\""
"\"dense_tokens\""
"\"type\""
"\"format\""
"\"width\""
"\"height\""
"\"dpi\""
"\"curves\""
"\"channels\""
"\"alphas\""
"\"cols\""
"\"legend\""
"\"alpha\""
"\"C\""
"\"steps\""
"\"gamma\""
"\"beta\""
"\"scale\""
"\"figure\""
"\"csv\""
"\"from\""
"\"to\""
"\"auto\""
"\"free\""
"\"sqrt(d)\""
"\"sqrt(d-1)\""
"\"log\""
"\"linear\""
"\"layernorm\""
"\"rmsnorm\""
"\"early\""
"\"middle\""
"\"late\""
"\"outlier-steps\""
"\"scatter\""
"\"scatter-grid\""
"\"by-token\""
"\"by-channel\""
"\"alpha-std\""
"\"tanh-family\""
"\"png,pdf\""
"\"svg\""
"\"upper left\""
"\"dyt\""
"\"dyisru\""
"\"dyisru_free\""
"\"derf\""
"\"dyt_theory\""
"true"
"false"
"null"
"1e-5"
"9007199254740992"
"1e309"
"\\u0000"
EOF

cat >"$OUT/shard_report.dict" <<'EOF'
"\"tool\""
"\"name\""
"\"version\""
"\"normcmp\""
"\"command\""
"\"config\""
"\"output\""
"\"source\""
"\"shard\""
"\"index\""
"\"count\""
"\"config_sha256\""
"\"layers\""
"\"analysed\""
"\"inputs\""
"\"outputs\""
"\"path\""
"\"format\""
"\"layer\""
"\"sha256\""
"\"bytes\""
"\"norm\""
"\"layernorm\""
"\"rmsnorm\""
"\"eps\""
"\"tokens\""
"\"dim\""
"\"input_stats\""
"\"fit_data\""
"\"points\""
"\"fits\""
"\"jacobian\""
"\"surrogates\""
"\"backprop_rel_err\""
"\"dyt\""
"\"alpha\""
"\"gamma\""
"\"theory_alpha\""
"\"r2\""
"\"report.json\""
"\"../x.png\""
"1e999"
"-1e999"
"9007199254740993"
"100001"
"null"
"\\u0000"
"\\ud800"
"\xc0\xaf"
"\xed\xa0\x80"
EOF
cat >"$OUT/sharded.dict" <<'EOF'
"|SHARD|"
"@fifo"
"@dir"
"@gone"
"@none"
"@link:s1.safetensors"
"\"weight_map\""
"\"metadata\""
"\"s1.safetensors\""
"\"s2.safetensors\""
"\"s3.safetensors\""
"\"../s1.safetensors\""
"\"/s1.safetensors\""
"\"dtype\""
"\"shape\""
"\"data_offsets\""
"\"__metadata__\""
"\"F32\""
"\"BF16\""
"\"F16\""
EOF

# ---- run
found=0
run_one() {
    t=$1
    work="$OUT/corpus/$t"
    art="$OUT/artifacts/$t"
    mkdir -p "$work" "$art" "tests/fuzz/corpus/$t"
    dict=""
    [ -f "$OUT/$t.dict" ] && dict="-dict=$OUT/$t.dict"
    # shellcheck disable=SC2086
    "$OUT/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
        -rss_limit_mb=2560 -max_len=16384 -artifact_prefix="$art/" $dict ${FUZZ_ARGS:-} \
        "$work" "tests/fuzz/corpus/$t" >"$OUT/$t.log" 2>&1 || true
}

jobs=${FUZZ_JOBS:-1}
running=0
for t in $targets; do
    echo "fuzz.sh: fuzzing $t for ${seconds}s (log: $OUT/$t.log)"
    rm -f "$OUT/artifacts/$t/"* 2>/dev/null || true
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait
        running=0
    fi
done
wait

echo
for t in $targets; do
    log="$OUT/$t.log"
    # libFuzzer's last status line: "#N DONE cov: X ft: Y corp: U/S ..."
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    cov=$(printf '%s\n' "$last" | grep -o 'cov: [0-9]* ft: [0-9]* corp: [^ ]*' || true)
    final() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }
    printf '%-12s executions %s (%s/s), %s, new units %s, peak RSS %s MB\n' "$t" \
        "$(final number_of_executed_units)" "$(final average_exec_per_sec)" "$cov" \
        "$(final new_units_added)" "$(final peak_rss_mb)"
    for a in "$OUT/artifacts/$t/"*; do
        [ -f "$a" ] || continue
        name=$(basename "$a")
        cp "$a" "tests/fuzz/corpus/$t/$name"
        found=$((found + 1))
        echo "  FOUND $name: saved as tests/fuzz/corpus/$t/$name (see $log)"
        grep -m 3 -E 'ERROR: (Address|Leak)Sanitizer|ERROR: libFuzzer|runtime error|SUMMARY' \
            "$log" | sed 's/^/    /' || true
    done
done
if [ "$found" -ne 0 ]; then
    echo "fuzz.sh: $found input(s) found; \`make test\` now replays them (fix, then commit)"
    exit 1
fi
echo "fuzz.sh: nothing found"
