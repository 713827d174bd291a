#!/bin/sh
# make bench: time normcmp on a 4096 x 4096 float32 LayerNorm layer, the
# fixed cost of a run on a 64 x 64 one and on data/vit4mnist/ln00, and
# what flushing its outputs to disk (fsync) costs.
#
#   BENCH_REPEATS=5      repeats per measurement (medians are reported)
#   BENCH_REFERENCE=1    also time the NumPy + SciPy + Matplotlib pipelines
#                        (scripts/bench_model.sh; 0 skips them)
#   BENCH_MODEL=1        the 7B-shaped run (scripts/bench_model.sh; 0 skips it)
#
# The machine is shared and noisy: compare ratios and medians.
set -eu
BUILD=${BUILD:-build}
NC=$BUILD/normcmp
reps=${BENCH_REPEATS:-5}
dir=$BUILD/bench
mkdir -p "$dir"
data=$dir/late_4096x4096.npy
if [ ! -f "$data" ]; then
    echo "bench: generating $data (normcmp synth, preset late, seed 5)"
    "$NC" synth -o "$data" --preset late --tokens 4096 --dim 4096 --seed 5
fi

echo "normcmp bench: $(uname -m), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "compiled with: ${CFLAGS_USED:-?}"
echo

echo "== stages, through the library ($BUILD/normcmp-bench) =="
"$BUILD/normcmp-bench" "$data" "$reps"
echo

echo "== the whole command, end to end (wall s, peak RSS; goal for fit with the Jacobian: 0.4 s) =="
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# the token bootstrap and the drop-in parameters, each on and off
for what in "fit --no-jacobian" "fit --no-dropin --bootstrap 0" "fit --no-dropin" "fit"; do
    walls=""
    rss=0
    i=0
    while [ $i -lt "$reps" ]; do
        # shellcheck disable=SC2086
        out=$( { /usr/bin/time -f '%e %M' "$NC" $what "$data" --out "$dir/out" --quiet >/dev/null; } 2>&1 | tail -n 1)
        walls="$walls ${out% *}"
        r=${out#* }
        [ "$r" -gt "$rss" ] && rss=$r
        i=$((i + 1))
    done
    med=$(printf '%s\n' $walls | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
    printf '  normcmp %-29s median %6.2f s  (runs:%s)  peak RSS %d MB (file %d MB)\n' \
        "$what" "$med" "$walls" $((rss / 1024)) $(($(stat -c %s "$data") / 1048576))
done
echo "  load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# durability (docs/outputs.md): the outputs' fsyncs, timed inside the
# calls by strace (-c -w: wall time spent in each call), beside the whole
# command's wall time without strace
echo "== durability: time inside fsync (strace -c -w), medians of $reps =="
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for what in "fit data/vit4mnist/ln00_input.npy data/vit4mnist/ln05_input.npy data/vit4mnist/ln11_input.npy" \
    "run configs/demo.json"; do
    case $what in
    fit*) label="fit of data/vit4mnist's 3 layers" ;;
    *) label="run configs/demo.json (figures)" ;;
    esac
    syncs="" walls="" calls=0
    i=0
    while [ $i -lt "$reps" ]; do
        # shellcheck disable=SC2086
        strace -f -c -w -e trace=fsync,fdatasync -o "$dir/strace.txt" "$NC" $what --out "$dir/dur" \
            --quiet >/dev/null
        line=$(awk '$NF == "total" { print $2, $4 }' "$dir/strace.txt")
        syncs="$syncs ${line% *}"
        calls=${line#* }
        # shellcheck disable=SC2086
        out=$( { /usr/bin/time -f '%e' "$NC" $what --out "$dir/dur" --quiet >/dev/null; } 2>&1 | tail -n 1)
        walls="$walls $out"
        i=$((i + 1))
    done
    med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
    # shellcheck disable=SC2086
    printf '  normcmp %-34s %2d fsync calls: median %.4f s inside them, of the command'"'"'s %.2f s\n' \
        "$label" "$calls" "$(med $syncs)" "$(med $walls)"
done
rm -rf "$dir/dur"
echo "  load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# the fixed cost of a run: what a run costs whatever its data (start-up,
# the fits' scans, the report, the output folder), on a layer too small to
# matter, and on the small real layer; 20 runs per timing (/usr/bin/time
# counts hundredths of a second), wall and CPU (user + system) per run
small=$dir/fixed_64x64.npy
[ -f "$small" ] || "$NC" synth -o "$small" --preset late --tokens 64 --dim 64 --seed 5
echo "== the fixed cost of a run (ms per run: mean of 20 runs, median of $reps; goal: under 10 ms) =="
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for input in "$small" data/vit4mnist/ln00_input.npy; do
    walls=""
    cpus=""
    i=0
    while [ $i -lt "$reps" ]; do
        out=$( { /usr/bin/time -f '%e %U %S' sh -c 'k=0; while [ $k -lt 20 ]; do
            "$1" fit "$2" --out "$3" --quiet >/dev/null || exit 1; k=$((k + 1)); done' \
            sh "$NC" "$input" "$dir/fixed"; } 2>&1 | tail -n 1)
        walls="$walls $(echo "$out" | awk '{print $1 * 50}')"
        cpus="$cpus $(echo "$out" | awk '{print ($2 + $3) * 50}')"
        i=$((i + 1))
    done
    printf '  normcmp fit %-20s wall %6.1f ms  cpu %6.1f ms  (walls:%s)\n' "$(basename "$input")" \
        "$(printf '%s\n' $walls | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" \
        "$(printf '%s\n' $cpus | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" "$walls"
done
echo "  load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# the 7B-shaped model and the ratios against the NumPy pipelines
# (scripts/bench_model.sh, docs/whole_models.md)
BUILD=$BUILD scripts/bench_model.sh
