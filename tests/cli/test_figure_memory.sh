# test_figure_memory.sh - memory of the figures across layers is linear in
# the number of layers: a run of 100 and one of 1000 tiny synthetic layers,
# each with alpha-std and alpha-depth over all of them, and the peak
# resident memory of the second at most ten times that of the first (a
# linear cost with any fixed part gives at most 10x; the metadata built by
# copying a growing string per layer gave 10 GB at 1000 layers). Plain
# builds also run under a 2 GB address-space limit, so that a quadratic
# regression fails at once instead of exhausting the machine (sanitizer
# builds reserve terabytes of address space: no limit there).
. tests/cli/lib.sh

limit=""
case "$BUILD" in
*san*) ;;
*) limit="ulimit -v 2000000;" ;;
esac

peak_kb() { # N: runs N layers; the peak RSS in KB into $T/timeN
    n=$1
    /usr/bin/python3 - "$T/m$n.json" "$n" <<'PY'
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
layers = [{"synth": {"preset": "middle", "tokens": 8, "dim": 8, "seed": k + 1,
                     "scale_median": 0.5 * 1.001 ** k}, "label": f"layers.{k}.ln"}
          for k in range(n)]
json.dump({"name": f"m{n}", "jacobian": {"enabled": False}, "layers": layers,
           "figures": [{"type": "alpha-std"}, {"type": "alpha-depth"}]}, open(path, "w"))
PY
    _cmd="run $n layers with alpha-std and alpha-depth"
    sh -c "$limit exec /usr/bin/time -f '%M' -o '$T/time$n' '$NC' run '$T/m$n.json' --out '$T/o$n' --quiet" \
        >"$T/.out" 2>"$T/.err"
    _status=$?
    expect_status 0
    expect_file "$T/o$n/alpha_std.png"
    expect_file "$T/o$n/alpha_depth.png"
}

peak_kb 100
peak_kb 1000
p100=$(tail -n 1 "$T/time100")
p1000=$(tail -n 1 "$T/time1000")
_cmd="peak RSS: $p100 KB at 100 layers, $p1000 KB at 1000"
case "$p100$p1000" in
*[!0-9]*|"") _bad "no peak memory measured" ;;
*) if [ "$p1000" -le $((10 * p100)) ]; then _ok; else _bad "peak memory grew more than linearly"; fi ;;
esac
# every layer is in the figures' metadata
check "alpha-std metadata names all 1000 layers" /usr/bin/python3 -c "
from PIL import Image
im = Image.open('$T/o1000/alpha_std.png')
names = im.info['Layer'].split(', ')
assert len(names) == 1000 and names[0] == 'layers.0.ln' and names[-1] == 'layers.999.ln', len(names)
"

done_tests
