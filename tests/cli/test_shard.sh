# test_shard.sh - `run --shard K/N` and `merge` (docs/whole_models.md): the
# shards, run with GNU parallel as the README shows, merge into a report
# whose every per-layer number and run-level block equal an unsharded run's
# (tests/cli/merge_compare.py) and the same summary on stdout; merge refuses mixed, missing and repeated
# shards with one line and exit 2, and leaves no output folder.
. tests/cli/lib.sh

"$NC" synth -o "$T/three.safetensors" --preset all --tokens 512 --dim 96 --seed 4 --affine \
    >/dev/null 2>&1
write_config() { # $1 file, $2 seed of the run
    cat >"$1" <<JSON
{
  "name": "shardtest",
  "seed": $2,
  "roles": {"^late": "attn_norm", "^e1$": "mlp_norm"},
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

run env COLUMNS=80 "$NC" run "$T/c.json" --out "$T/full" --quiet
expect_status 0
cp "$T/.out" "$T/full.stdout"

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

run env COLUMNS=80 "$NC" merge "$T/merged" "$T/shard3" "$T/shard1" "$T/shard2" --quiet
expect_status 0
# merge prints the summary an unsharded run prints (the folder's name aside)
sed '/^Open /,$d' "$T/.out" >"$T/merged.stdout"
sed '/^Open /,$d' "$T/full.stdout" >"$T/full1.stdout"
expect_out_has "Open $T/merged/index.html"
check "merge prints the summary of the unsharded run" cmp "$T/full1.stdout" "$T/merged.stdout"
check "the summary has a line per layer and the run's verdict" grep -q "^Run: " "$T/merged.stdout"
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
# --- a shard folder is untrusted input (docs/whole_models.md): every file
# merge reads is opened without blocking, must be a regular file inside the
# folder, is read up to a bound, and the report is checked field by field.
# Each case: a copy of shard 1 made hostile, merged with shards 2 and 3:
# exit 2, one line naming the file and field, no output folder.
cat >"$T/evil.py" <<'PY'
# evil.py DIR CASE: edits DIR/report.json (raw bytes where JSON cannot say them)
import json, sys
d, case = sys.argv[1], sys.argv[2]
p = d + "/report.json"
r = json.load(open(p))
raw = {}
if case == "version_utf8":
    r["tool"]["version"] = "@A@"; raw["@A@"] = b"1.0\xff"
elif case == "layer_utf8":
    r["shard"]["layers"][0] = "@A@"; raw['"@A@"'] = b'"e\xc0\xaf"'
elif case == "input_utf8":
    r["inputs"][0]["tensor"] = "@A@"; raw["@A@"] = b"\xed\xa0\x80"
elif case == "inf":
    r["layers"][0]["fits"]["dyt"]["alpha"] = "@A@"; raw['"@A@"'] = b"1e999"
elif case == "no_output":
    del r["config"]["output"]
elif case == "tokens":
    r["layers"][0]["tokens"] = -5
elif case == "count":
    r["shard"]["count"] = 1e300
elif case == "dupkey":
    r["layers"][0]["dim"] = "@A@"; raw['"@A@"'] = b'64, "dim": 65'
elif case == "nul":
    r["command"] = "@A@"; raw["@A@"] = b"x\\u0000y"
elif case == "outname":
    r["outputs"].append("../x.png")
elif case == "boot_ci":
    r["layers"][0]["bootstrap"]["residual_removed"]["ci95"] = [0.1]
elif case == "boot_reps":
    r["layers"][0]["bootstrap"]["run_replicates"]["log_alpha"][3] = "x"
elif case == "boot_fit":
    r["layers"][0]["bootstrap"]["best_r2"]["fit"] = "tanh"
elif case == "source":
    r["layers"][0]["source"] = 7
text = json.dumps(r, indent=1).encode()
for k, v in raw.items():
    text = text.replace(k.encode(), v)
open(p, "wb").write(text)
PY
evil() { # $1 case (or a shell snippet run in the copy), $2 expected message after "merge: "
    rm -rf "$T/evil" "$T/mo"
    cp -a "$T/shard1" "$T/evil"
    case "$1" in
    sh:*) (cd "$T/evil" && eval "${1#sh:}") ;;
    *) /usr/bin/python3 "$T/evil.py" "$T/evil" "$1" ;;
    esac
    # bounded: a blocked open or an unbounded read must not hang or eat the
    # machine (no address-space limit under ASan, which reserves terabytes)
    lim="ulimit -v 4000000;"
    case "$BUILD" in *san*) lim="" ;; esac
    run sh -c "$lim exec timeout 20 '$NC' merge '$T/mo' '$T/evil' '$T/shard2' '$T/shard3' --quiet"
    expect_status 2
    expect_err "normcmp: merge: $2"
    expect_no_file "$T/mo"
}
E="$T/evil"
evil "sh:rm report.json; mkfifo report.json" "$E/report.json: not a regular file (a FIFO), expected a shard report"
evil "sh:rm report.json; ln -s /dev/zero report.json" "$E/report.json: leads out of its folder (an absolute path, '..' or a symbolic link to elsewhere), expected a shard report inside it"
if [ "$(id -u)" = 0 ]; then # a device node in the folder itself (mknod needs root)
    evil "sh:rm report.json; mknod report.json c 1 5" "$E/report.json: not a regular file (a character device), expected a shard report"
fi
evil "sh:rm config.json; mkfifo config.json" "$E/config.json: not a regular file (a FIFO), expected an output file"
evil "sh:rm config.json; ln -s /dev/zero config.json" "$E/config.json: leads out of its folder (an absolute path, '..' or a symbolic link to elsewhere), expected an output file inside it"
evil "sh:rm e1_scatter.png; mkfifo e1_scatter.png" "$E/e1_scatter.png: not a regular file (a FIFO), expected an output file"
printf 'secret\n' >"$T/secret"
evil "sh:rm e1_scatter.png; ln -s '$T/secret' e1_scatter.png" "$E/e1_scatter.png: leads out of its folder (an absolute path, '..' or a symbolic link to elsewhere), expected an output file inside it"
evil "sh:rm e1_scatter.png; ln -s ../secret e1_scatter.png" "$E/e1_scatter.png: leads out of its folder (an absolute path, '..' or a symbolic link to elsewhere), expected an output file inside it"
evil version_utf8 "$E/report.json: tool.version: found byte 0xff at position 3 of the string that is not UTF-8, expected UTF-8 text"
evil layer_utf8 "$E/report.json: shard.layers[0]: found byte 0xc0 at position 1 of the string that is not UTF-8, expected UTF-8 text"
evil input_utf8 "$E/report.json: inputs[0].tensor: found byte 0xed at position 0 of the string that is not UTF-8, expected UTF-8 text"
evil inf "$E/report.json: layers[0].fits.dyt.alpha: found a number beyond the range of a double, expected a finite number (a report writes null instead)"
evil no_output "$E/report.json: config.output: found nothing, expected a string"
evil tokens "$E/report.json: layers[0].tokens: found the number -5, expected a whole number in [0, 9007199254740992]"
evil count "$E/report.json: shard.count: found the number 1.0000000000000001e+300, expected a whole number in [1, 100000]"
evil dupkey "$E/report.json: layers[0].dim: found the key twice, expected each key once"
evil nul "$E/report.json: malformed JSON at line 6, column 15: the escape \\u0000 (a NUL character) inside a string, expected text without NUL"
evil outname "$E/report.json: outputs[8]: found a string, expected a plain file name (no '/', not '.', '..' or report.json, at most 255 bytes)"
evil boot_ci "$E/report.json: layers[0].bootstrap.residual_removed.ci95: found an array, expected an array of two numbers"
evil boot_reps "$E/report.json: layers[0].bootstrap.run_replicates.log_alpha: found an array, expected an array of 200 numbers"
evil boot_fit "$E/report.json: layers[0].bootstrap.best_r2.fit: found a string, expected the name of a fit"
evil source "$E/report.json: layers[0].source: found the number 7, expected a string"
# a link that stays inside the shard folder is followed; a copy is never
# readable by more users than the shard's file
rm -rf "$T/evil" "$T/mo"
cp -a "$T/shard1" "$T/evil"
mv "$T/evil/e1_scatter.png" "$T/evil/e1.png.data"
ln -s e1.png.data "$T/evil/e1_scatter.png"
chmod 640 "$T/evil/e1.png.data"
run "$NC" merge "$T/mo" "$T/evil" "$T/shard2" "$T/shard3" --quiet
expect_status 0
if [ "$(stat -c %a "$T/mo/e1_scatter.png")" = 640 ] && [ ! -L "$T/mo/e1_scatter.png" ]; then _ok; else _bad "copy of a 640 file: mode $(stat -c %a "$T/mo/e1_scatter.png")"; fi
if cmp -s "$T/mo/e1_scatter.png" "$T/evil/e1.png.data"; then _ok; else _bad "copy differs"; fi

# --shard values
for bad in 0/3 4/3 3 /3 a/b; do
    run "$NC" run "$T/c.json" --shard "$bad" --out "$T/bad" --quiet
    expect_status 2
    expect_no_file "$T/bad"
done

done_tests
