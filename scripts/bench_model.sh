#!/bin/sh
# The whole-model part of make bench (docs/whole_models.md "Speed"):
#
#  1. a 7B-shaped run: 32 layers of 4096 x 4096 bfloat16 made by normcmp
#     synth (1 GiB), `normcmp run` with every fit, the Jacobian comparison,
#     a scatter per layer and the run-level figures; end-to-end wall time
#     (median) and peak RSS (largest), against the goal of 15 s and 300 MB,
#     and where the time went (summed from report.json);
#  2. one layer against the NumPy/SciPy/Matplotlib pipelines, at 2048 x 2048
#     and 4096 x 4096 float32: `normcmp plot FILE --figure scatter
#     --no-jacobian --no-dropin` against the same work done the fast NumPy way
#     (scripts/bench_reference.py --same-work), and against the notebook
#     way (curve_fit and a scatter of all points; 2048 only unless
#     BENCH_NOTEBOOK_4096=1: it takes minutes).
#
#   BENCH_MODEL_REPEATS=3   runs of the 7B-shaped model (median reported)
#   BENCH_REPEATS=5         runs of normcmp on one layer
#   BENCH_REF_REPEATS=3     runs of the same-work NumPy reference
#   BENCH_MODEL=0           skip part 1;  BENCH_REFERENCE=0 skip part 2
#
# The machine is shared: every measurement prints the load average before
# and after; compare medians and ratios, not single runs.
set -eu
BUILD=${BUILD:-build}
NC=$BUILD/normcmp
dir=$BUILD/bench
mkdir -p "$dir"

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# timed CMD...: appends "wall rss_kb" of one run to $runs
timed() {
    /usr/bin/time -f '%e %M %U %S' -o "$dir/.time" "$@" >"$dir/.stdout" 2>"$dir/.stderr" || {
        echo "bench: failed: $*" >&2
        cat "$dir/.stderr" >&2
        exit 1
    }
    runs="$runs
$(tail -n 1 "$dir/.time")"
}

if [ "${BENCH_MODEL:-1}" = 1 ]; then
    model=$dir/model7b
    mkdir -p "$model"
    # 8 early, 12 middle, 12 late layers (the presets of synth.h), seeds 100..131
    i=0
    while [ $i -lt 32 ]; do
        f=$(printf '%s/layer%02d_input.npy' "$model" $i)
        if [ $i -lt 8 ]; then p=early; elif [ $i -lt 20 ]; then p=middle; else p=late; fi
        if [ ! -f "$f" ]; then
            [ $i -eq 0 ] && echo "bench: generating 32 layers of 4096 x 4096 bf16 into $model (once)"
            "$NC" synth -o "$f" --preset $p --tokens 4096 --dim 4096 --seed $((100 + i)) --dtype bf16 >/dev/null 2>&1
        fi
        i=$((i + 1))
    done
    {
        echo '{"name": "model7b", "norm": "layernorm", "layers": ['
        i=0
        while [ $i -lt 32 ]; do
            printf '  {"file": "layer%02d_input.npy"}%s\n' $i "$([ $i -lt 31 ] && echo ,)"
            i=$((i + 1))
        done
        echo '], "figures": [{"type": "scatter"}, {"type": "alpha-std"}, {"type": "tanh-family"}]}'
    } >"$model/model7b.json"
    echo "== 7B-shaped run: 32 layers x 4096 x 4096 bf16 ($(du -sh "$model" | cut -f1)), every fit, Jacobian, scatter per layer, run-level figures =="
    reps=${BENCH_MODEL_REPEATS:-3}
    runs=""
    echo "  load average before: $(load)"
    k=0
    while [ $k -lt "$reps" ]; do
        timed "$NC" run "$model/model7b.json" --out "$dir/model7b_out" --quiet
        k=$((k + 1))
    done
    echo "  load average after:  $(load)"
    walls=$(printf '%s\n' "$runs" | awk 'NF {print $1}')
    rss=$(printf '%s\n' "$runs" | awk 'NF && $2 > m {m = $2} END {print m}')
    cpus=$(printf '%s\n' "$runs" | awk 'NF {print $3 + $4}')
    # shellcheck disable=SC2086
    printf '  normcmp run: median %.1f s (runs: %s), peak RSS %d MB; goal < 15 s and < 300 MB\n' \
        "$(median $walls)" "$(echo $walls)" $((rss / 1024))
    # shellcheck disable=SC2086
    printf '  CPU time (user + sys, less sensitive to the load): median %.1f s (runs: %s)\n' \
        "$(median $cpus)" "$(echo $cpus)"
    echo "  where the time went in the last run (seconds summed over layers, from report.json):"
    /usr/bin/python3 - "$dir/model7b_out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
tot = {}
for l in r["layers"]:
    for k, v in l.get("timing", {}).items():
        if k.endswith("_s"):
            tot["layer " + k[:-2]] = tot.get("layer " + k[:-2], 0) + v
    for k, v in l.get("jacobian", {}).get("timing", {}).items():
        if k.endswith("_s") and k != "dense_gemm_s":
            tot["jacobian " + k[:-2]] = tot.get("jacobian " + k[:-2], 0) + v
for k, v in sorted(tot.items(), key=lambda kv: -kv[1]):
    print(f"    {k:<24} {v:7.2f}")
print(f"    {'sum':<24} {sum(tot.values()):7.2f}   (the rest: opening, hashing, figures, report)")
PY
    echo
fi

if [ "${BENCH_REFERENCE:-1}" = 1 ]; then
    echo "== one layer against NumPy/SciPy/Matplotlib (same work: fits, exact metrics, scatter, report; no Jacobian) =="
    for n in 2048 4096; do
        data=$dir/late_${n}x${n}.npy
        [ -f "$data" ] || "$NC" synth -o "$data" --preset late --tokens $n --dim $n --seed 5 >/dev/null 2>&1
        echo "  $n x $n float32, load average before: $(load)"
        runs=""
        k=0
        while [ $k -lt "${BENCH_REPEATS:-5}" ]; do
            timed "$NC" plot "$data" --figure scatter --no-jacobian --no-dropin --out "$dir/plot_$n" --quiet
            k=$((k + 1))
        done
        nc_walls=$(printf '%s\n' "$runs" | awk 'NF {print $1}')
        # shellcheck disable=SC2086
        nc_med=$(median $nc_walls)
        runs=""
        k=0
        while [ $k -lt "${BENCH_REF_REPEATS:-3}" ]; do
            timed /usr/bin/python3 scripts/bench_reference.py --same-work "$data"
            k=$((k + 1))
        done
        echo "    NumPy same work, stages of the last run:"
        sed 's/^/    /' "$dir/.stdout"
        ref_walls=$(printf '%s\n' "$runs" | awk 'NF {print $1}')
        ref_rss=$(printf '%s\n' "$runs" | awk 'NF && $2 > m {m = $2} END {print m}')
        # shellcheck disable=SC2086
        ref_med=$(median $ref_walls)
        nb=""
        if [ $n -eq 2048 ] || [ "${BENCH_NOTEBOOK_4096:-0}" = 1 ]; then
            runs=""
            timed /usr/bin/python3 scripts/bench_reference.py "$data"
            nb=$(printf '%s\n' "$runs" | awk 'NF {print $1}')
        fi
        # shellcheck disable=SC2086
        printf '    normcmp plot --figure scatter --no-jacobian --no-dropin  median %6.2f s (runs: %s)\n' "$nc_med" "$(echo $nc_walls)"
        # shellcheck disable=SC2086
        printf '    NumPy same work (--same-work)                median %6.2f s (runs: %s), peak RSS %d MB\n' \
            "$ref_med" "$(echo $ref_walls)" $((ref_rss / 1024))
        printf '    ratio, same work: %.0fx\n' "$(echo "$ref_med $nc_med" | awk '{print $1 / $2}')"
        if [ -n "$nb" ]; then
            printf '    NumPy notebook way (curve_fit + scatter of all points): %.1f s, ratio %.0fx\n' \
                "$nb" "$(echo "$nb $nc_med" | awk '{print $1 / $2}')"
        fi
        echo "    load average after: $(load)"
    done
fi
