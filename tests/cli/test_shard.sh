# test_shard.sh - `run --shard K/N` and `merge` (docs/whole_models.md): the
# shards, run with GNU parallel as the README shows, merge into a report
# whose every per-layer number and run-level block equal an unsharded run's
# (tests/cli/merge_compare.py); merge refuses mixed, missing and repeated
# shards with one line and exit 2, and leaves no output folder.
. tests/cli/lib.sh

"$NC" synth -o "$T/three.safetensors" --preset all --tokens 512 --dim 96 --seed 4 --affine \
    >/dev/null 2>&1
write_config() { # $1 file, $2 seed of the run
    cat >"$1" <<JSON
{
  "name": "shardtest",
  "seed": $2,
  "layers": [
    {"synth": {"preset": "early", "tokens": 600, "dim": 64, "seed": 1, "affine": true}, "label": "e1"},
    {"file": "$T/three.safetensors"},
    {"synth": {"preset": "late", "tokens": 600, "dim": 64, "seed": 3}, "label": "late2"},
    {"synth": {"preset": "middle", "tokens": 500, "dim": 80, "seed": 2}, "label": "m2"}
  ],
  "figures": [
    {"type": "scatter"},
    {"type": "jacobian", "layers": ["late*", "m2"], "name": "jac"},
    {"type": "alpha-std"},
    {"type": "alpha-depth"},
    {"type": "tanh-family"},
    {"type": "scatter-grid", "layers": ["e1", "late2"]}
  ]
}
JSON
}
write_config "$T/c.json" 1
write_config "$T/other.json" 2

run "$NC" run "$T/c.json" --out "$T/full" --quiet
expect_status 0

# the GNU parallel line of the README, on this machine (without GNU
# parallel, the same shards one after another)
if command -v parallel >/dev/null 2>&1; then
    run sh -c "parallel --will-cite -j 2 '$NC' run '$T/c.json' --shard {}/3 --out '$T/shard{}' --quiet ::: 1 2 3 </dev/null"
else
    skip "the README's GNU parallel line" parallel
    run sh -c "for k in 1 2 3; do '$NC' run '$T/c.json' --shard \$k/3 --out '$T/shard'\$k --quiet || exit 1; done"
fi
expect_status 0
have_py PIL || skip "the merged figure's pixels (merge_compare.py)" python3-pil
for k in 1 2 3; do expect_file "$T/shard$k/report.json"; done
# a shard analyses layers i (plan order) with i mod 3 = K-1: shard 1 has e1 (0) and late (3)
run /usr/bin/python3 -c "import json,sys; r=json.load(open('$T/shard1/report.json')); print(' '.join(l['name'] for l in r['layers']))"
if [ "$(cat "$T/.out")" = "e1 late" ]; then _ok; else _bad "shard 1/3 analysed: $(cat "$T/.out")"; fi

run "$NC" merge "$T/merged" "$T/shard3" "$T/shard1" "$T/shard2" --quiet
expect_status 0
run /usr/bin/python3 tests/cli/merge_compare.py "$T/full" "$T/merged"
expect_status 0
expect_out_has ok
expect_file "$T/merged/index.html"

# a model-sized plan: 70 layers (more than the 64 figures' selection once
# held), each with its scatter, sharded in 2 and merged
{
    echo '{"name": "many", "layers": ['
    i=0
    while [ $i -lt 70 ]; do
        printf '{"synth": {"preset": "late", "tokens": 48, "dim": 16, "seed": %d}, "label": "l%02d"}%s\n' \
            $((i + 1)) $i "$([ $i -lt 69 ] && echo ,)"
        i=$((i + 1))
    done
    echo '], "figures": [{"type": "scatter"}, {"type": "alpha-std"}]}'
} >"$T/many.json"
run "$NC" run "$T/many.json" --out "$T/many" --quiet
expect_status 0
expect_file "$T/many/l69_scatter.png"
run "$NC" run "$T/many.json" --shard 1/2 --out "$T/many1" --quiet
expect_status 0
run "$NC" run "$T/many.json" --shard 2/2 --out "$T/many2" --quiet
expect_status 0
run "$NC" merge "$T/many_merged" "$T/many1" "$T/many2" --quiet
expect_status 0
run /usr/bin/python3 tests/cli/merge_compare.py "$T/many" "$T/many_merged"
expect_status 0

# refusals: one line, exit 2, no output folder
run "$NC" merge "$T/m1" "$T/shard1" "$T/shard2"
expect_status 2
expect_err "normcmp: merge: shard 3/3 is missing (got 2 of 3 folders)"
expect_no_file "$T/m1"
run "$NC" merge "$T/m2" "$T/shard1" "$T/shard2" "$T/shard2"
expect_status 2
expect_err "normcmp: merge: $T/shard2 and $T/shard2 are both shard 2/3 (overlapping shards)"
expect_no_file "$T/m2"
run "$NC" run "$T/other.json" --shard 3/3 --out "$T/other3" --quiet
expect_status 0
run "$NC" merge "$T/m3" "$T/shard1" "$T/shard2" "$T/other3"
expect_status 2
expect_err_has "come from different configs"
expect_no_file "$T/m3"
run "$NC" run "$T/c.json" --shard 1/2 --out "$T/half1" --quiet
expect_status 0
run "$NC" merge "$T/m4" "$T/shard2" "$T/shard3" "$T/half1"
expect_status 2
expect_err "normcmp: merge: $T/shard2 is shard 2/3 but $T/half1 is shard 1/2 (expected one N)"
run "$NC" merge "$T/m5" "$T/full"
expect_status 2
expect_err "normcmp: merge: $T/full/report.json: shard: missing (expected the report of 'normcmp run CONFIG --shard K/N')"
run "$NC" merge "$T/m6" "$T/nowhere"
expect_status 2
expect_err "normcmp: merge: $T/nowhere/report.json: cannot read (expected the output folder of 'normcmp run CONFIG --shard K/N')"
expect_no_file "$T/m6"
run "$NC" merge "$T/shard1/" "$T/shard1" "$T/shard2" "$T/shard3"
expect_status 2
expect_err "normcmp: merge: OUT $T/shard1/ is shard folder $T/shard1 (expected a folder of its own)"
# an input rewritten between two shards' runs
"$NC" synth -o "$T/three.safetensors" --preset all --tokens 512 --dim 96 --seed 5 --affine \
    >/dev/null 2>&1
run "$NC" run "$T/c.json" --shard 3/3 --out "$T/shard3b" --quiet
expect_status 0
run "$NC" merge "$T/m7" "$T/shard1" "$T/shard2" "$T/shard3b"
expect_status 2
expect_err "normcmp: merge: input $T/three.safetensors has different SHA-256 in two shards (the file changed between their runs)"
expect_no_file "$T/m7"
# --shard values
for bad in 0/3 4/3 3 /3 a/b; do
    run "$NC" run "$T/c.json" --shard "$bad" --out "$T/bad" --quiet
    expect_status 2
    expect_no_file "$T/bad"
done

done_tests
