# test_memcap.sh - `fit` with the Jacobian under an address-space limit
# (ulimit -v 80-150 MB) finishes within a bounded time: either the whole
# run (the dense check's memory is O(d * columns), it calls no BLAS) or one
# line "out of memory" and exit 1. Before, OpenBLAS's sgemm in the dense
# check retried a 128 MB buffer for ever. Skipped in sanitizer builds (ASan
# reserves terabytes of address space).
. tests/cli/lib.sh

case "$BUILD" in
*san*)
    echo "test_memcap: sanitizer build: address-space limits skipped" >&2
    done_tests
    exit
    ;;
esac

# a 4 KB input (16 x 64) and a wide one (8 x 4096: one token's J has 2^24
# entries, 64 MB as floats)
/usr/bin/python3 - "$T" <<'PY'
import random, sys
sys.path.insert(0, "tests/cli")
import npyw  # no NumPy needed
rng = random.Random(1)
npyw.save_npy(sys.argv[1] + "/small.npy", [npyw.normals(rng, 64) for _ in range(16)])
npyw.save_npy(sys.argv[1] + "/wide.npy", [[0.3 + v for v in npyw.normals(rng, 4096)] for _ in range(8)])
PY

for input in small wide; do
    for kb in 80000 100000 150000; do
        _cmd="fit $input.npy under ulimit -v $kb"
        out="$T/out_${input}_$kb"
        ( ulimit -v $kb; exec timeout 30 "$NC" fit "$T/$input.npy" --out "$out" --quiet ) \
            >"$T/.out" 2>"$T/.err"
        _status=$?
        case $_status in
        0)
            _ok
            check "$input $kb: the dense check ran" /usr/bin/python3 -c "
import json, sys
j = json.load(open('$out/report.json'))['layers'][0]['jacobian']
sys.exit(0 if j['dense_check']['status'] == 'ok' else 1)"
            ;;
        1)
            _ok
            if [ "$(wc -l <"$T/.err")" -eq 1 ] && grep -q "out of memory" "$T/.err"; then
                _ok
            else
                _bad "expected one line about memory"
            fi
            expect_no_file "$out/report.json"
            ;;
        124) _bad "timed out (hang under the memory limit)" ;;
        *) _bad "unexpected exit status" ;;
        esac
    done
done

done_tests
