# test_readme.sh - every command of README.md runs as typed on a fresh
# clone. tests/cli/readme_blocks.py extracts them (code blocks and the
# `code spans` that are commands: the command table's examples, `man ...`);
# each runs in README order, through sh, in a folder laid out as a clone's
# working tree (scripts/, data/, configs/, docs/, src/, the Makefile, build/
# = this build, `normcmp` on PATH), in an environment as bare as a new
# shell's, so later commands find what earlier ones wrote (out/vit.json, ...).
# Each exits 0 and writes what it says it writes (-o FILE, --out DIR's
# report.json and index.html, the dump's config beside it, ...). Commands
# that are not run are listed below (not_run), each with why and what is
# checked instead; a command that is neither run nor listed (a new make
# target, a line of a command block that is not a command) fails the test.
# Then: the quickstart's quoted summary against the real output at 80
# columns; the Hugging Face hf.py snippet as typed, against a stand-in for
# transformers (tests/cli/fake_transformers.py: Debian has no transformers);
# the notebook snippet as typed. Commands that take PyTorch are skipped
# without python3-torch, and so is whatever reads their outputs.
. tests/cli/lib.sh

R=$PWD
W=$T/clone
mkdir -p "$W" "$T/bin" "$T/home" "$T/log" "$T/fake/transformers"
for f in scripts data configs docs src Makefile; do ln -s "$R/$f" "$W/$f"; done
ln -s "$(dirname "$NC")" "$W/build"
ln -s "$NC" "$T/bin/normcmp"
cp tests/cli/fake_transformers.py "$T/fake/transformers/__init__.py"
tab=$(printf '\t')

run /usr/bin/python3 tests/cli/readme_blocks.py commands README.md
expect_status 0
cp "$T/.out" "$T/cmds"
check "README.md has commands" test -s "$T/cmds"
run /usr/bin/python3 tests/cli/readme_blocks.py block README.md "# hf.py"
expect_status 0
cp "$T/.out" "$W/hf.py"
run /usr/bin/python3 tests/cli/readme_blocks.py block README.md 'import sys; sys.path.insert(0, "scripts")'
expect_status 0
cp "$T/.out" "$T/notebook.py"

have_torch=0
have_py torch numpy && have_torch=1

# sh -c CMD in the clone, with a new shell's environment (none of make's
# MAKEFLAGS, SANITIZE=1, ... from the suite), nothing installed
# (NC_DEPS_INSTALL=0), summaries at 80 columns; extra VAR=VALUE first
in_clone() {
    run env -i HOME="$T/home" PATH="$T/bin:$PATH" LANG=C.UTF-8 COLUMNS=80 NC_DEPS_INSTALL=0 \
        PYTHONDONTWRITEBYTECODE=1 TMPDIR="${TMPDIR:-/tmp}" ASAN_OPTIONS="${ASAN_OPTIONS:-}" \
        UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" LSAN_OPTIONS="${LSAN_OPTIONS:-}" "$@" </dev/null
}

# typed LINE CMD [VAR=VALUE...]: runs CMD as typed; exit 0 and its outputs
typed() {
    _no=$1
    _c=$2
    shift 2
    # the Hugging Face snippet's transformers: the stand-in, for these only
    case $_c in *hf.py:*) set -- PYTHONPATH="$T/fake" "$@" ;; esac
    cd "$W" || exit 1
    in_clone "$@" sh -c "$_c"
    cd "$R" || exit 1
    _cmd="README.md:$_no: $_c"
    cp "$T/.out" "$T/log/$_no.out"
    cp "$T/.err" "$T/log/$_no.err"
    if [ "$_status" -ne 0 ]; then
        _bad "README.md:$_no: exit status $_status, expected 0"
        return
    fi
    _ok
    echo "ran: README.md:$_no: $_c"
    outputs_of "$_c" "$@" | while IFS= read -r f; do
        if [ -e "$W/$f" ]; then echo ok; else echo "README.md:$_no: expected $f"; fi
    done >"$T/outs"
    while IFS= read -r r; do
        if [ "$r" = ok ]; then _ok; else _bad "$r (after: $_c)"; fi
    done <"$T/outs"
}

# outputs_of CMD [VAR=VALUE...]: what CMD says it writes, one path a line
# (relative to the clone), from its arguments as the shell expands them
outputs_of() (
    cd "$W" || exit 1
    set +u # a skipped command's variables ($SLURM_ARRAY_TASK_ID) are unset
    _c=$1
    shift
    for v in "$@"; do export "${v?}"; done
    eval "set -- $_c"
    while [ $# -gt 0 ]; do
        case $1 in *=*) shift ;; *) break ;; esac
    done
    case $1 in
    parallel) # parallel [-j N] CMD... ::: VALUES: CMD once per value, {} replaced
        shift
        [ "$1" = -j ] && shift 2
        tmpl=""
        while [ $# -gt 0 ] && [ "$1" != ::: ]; do
            tmpl="$tmpl '$1'"
            shift
        done
        shift
        for v in "$@"; do
            outputs_of "$(printf '%s\n' "$tmpl" | sed "s|{}|$v|g")"
        done
        return
        ;;
    python3)
        case $2 in *dump_activations.py) ;; *) return ;; esac
        while [ $# -gt 1 ]; do
            if [ "$1" = -o ]; then
                case $2 in
                *.safetensors) printf '%s\n' "$2" "${2%.safetensors}.json" ;;
                *) printf '%s\n' "${2%/}/model.safetensors.index.json" "${2%/}.json" ;;
                esac
            fi
            shift
        done
        return
        ;;
    normcmp | build/normcmp) ;;
    *) return ;;
    esac
    sub=${2:-}
    first=${3:-}
    out=""
    while [ $# -gt 1 ]; do
        case $1 in
        --out) out=$2 ;;
        -o) printf '%s\n' "$2" ;;
        esac
        shift
    done
    case $sub in
    # a config without "output" writes to out/<its name> (docs/config.md)
    run | sweep) [ -n "$out" ] || out=out/$(basename "$first" .json) ;;
    merge) out=$first ;;
    esac
    [ -n "$out" ] && printf '%s\n' "${out%/}/report.json" "${out%/}/index.html"
)

# the paths a command names, quotes dropped (for what depends on a skip)
words_of() {
    printf '%s\n' "$1" | tr -d "\"'" | tr ' ' '\n'
}

# skip_cmd LINE CMD PACKAGE: skipped, and so is every later command that
# names what it would have written (a path starting with its stem)
skip_cmd() {
    skip "README.md:$1: $2" "$3"
    { words_of "$2" | sed -n '/^out\//p'; outputs_of "$2"; } |
        sed 's|/report.json$||; s|/index.html$||; s|/model.safetensors.index.json$||;
             s|\.safetensors$||; s|\.json$||; s|/$||' >>"$T/skipped"
}

# the package whose absence skips CMD, if it is missing; else nothing
missing_for() {
    case $1 in
    *dump_activations.py*--help*) ;;
    *dump_activations.py* | *swap_test.py* | *hf.py:*) [ "$have_torch" = 1 ] || echo python3-torch ;;
    parallel\ *) command -v parallel >/dev/null 2>&1 || echo parallel ;;
    man\ *) command -v man >/dev/null 2>&1 || echo man-db ;;
    esac
    for w in $(words_of "$1"); do
        while IFS= read -r s; do
            [ -n "$s" ] || continue
            case $w in "$s"*) echo "python3-torch" && return ;; esac
        done <"$T/skipped"
    done
}

# a make target the README names exists in the Makefile
target_exists() {
    t=${1#make}
    t=${t# }
    t=${t%% *}
    [ -n "$t" ] || t=all
    if grep -q "^$t:" Makefile; then _ok; else _bad "README.md: make $t: no such target in Makefile"; fi
}

# not_run LINE CMD NEED: a command that is not run as typed, why, and what
# is checked instead (skipped when NEED, a missing package, is not empty);
# 1 when CMD is not on the list (then it runs as typed)
not_run() {
    case $2 in
    make | "make check" | "make test")
        why="the suite: it runs on the build make made" ;;
    "make demo-model")
        why="3 minutes (dump, two runs, the swap test); the quickstart runs its dump and fit" ;;
    "make bench") why="minutes, and OpenBLAS, Matplotlib and hyperfine (docs/speed.md)" ;;
    "make figures") why="redraws the whole gallery (tests/cli/test_gallery.sh draws it)" ;;
    "make fuzz") why="runs libFuzzer for minutes, with clang" ;;
    "make install PREFIX=...")
        why="installs (PREFIX=... is a placeholder): tests/cli/test_install.sh installs into a DESTDIR" ;;
    "make uninstall") why="removes an install: tests/cli/test_install.sh" ;;
    make\ *) return 1 ;;
    "normcmp run") why="names the subcommand in a sentence" ;;
    "normcmp help CMD")
        why="CMD is a placeholder: runs 'normcmp help fit' instead"
        typed "$1" "normcmp help fit" ;;
    "normcmp merge out/m out/m.shard*")
        why="the shard folders it merges are made by no command before it; the merge of"
        why="$why 'Whole models' runs as typed" ;;
    *my_model.py:build*) why="my_model.py, my_weights.pt: placeholders for the reader's own" ;;
    scripts/deps.sh\ *)
        why="installs packages: NC_DEPS_INSTALL=0 instead (a known group: installed, or named missing)"
        cd "$W" || exit 1
        in_clone sh -c "$2"
        cd "$R" || exit 1
        _cmd="README.md:$1: NC_DEPS_INSTALL=0 $2"
        if [ "$_status" -eq 0 ] || { [ "$_status" -eq 1 ] && grep -q "^deps.sh: missing:" "$T/.err"; }; then
            _ok
        else
            _bad "README.md:$1: not a known group of scripts/deps.sh"
        fi
        ;;
    xdg-open\ *)
        why="opens a browser: the file it names exists instead"
        f=${2#xdg-open }
        if [ -n "$3" ]; then
            skip_cmd "$1" "$2" "$3"
            return 0
        elif [ -e "$W/$f" ]; then _ok; else _bad "README.md:$1: $f does not exist"; fi
        ;;
    *) return 1 ;;
    esac
    case $2 in make*) target_exists "$2" ;; esac
    echo "not run: README.md:$1: $2 ($why)"
}

: >"$T/skipped"
: >"$T/ran"
# shellcheck disable=SC2016 # '$SLURM_ARRAY_TASK_ID': the README's text
while IFS="$tab" read -r no kind cmd <&3; do
    if [ "$kind" = unknown ]; then
        _cmd=$cmd
        _bad "README.md:$no: '$cmd' in a block of commands is not a command this test knows"
        continue
    fi
    # the same command again (normcmp is build/normcmp on PATH): ran above
    key=$(printf '%s\n' "$cmd" | sed 's|^build/normcmp |normcmp |')
    if grep -qxF -- "$key" "$T/ran"; then
        echo "same as above: README.md:$no: $cmd"
        continue
    fi
    printf '%s\n' "$key" >>"$T/ran"
    need=$(missing_for "$cmd")
    not_run "$no" "$cmd" "$need" && continue
    if [ -n "$need" ]; then
        skip_cmd "$no" "$cmd" "$need"
        continue
    fi
    case $cmd in
    "make demo")
        # as typed, in the clone (its Makefile, this build), once make -n
        # shows that it would rebuild nothing (never over a stale build) and
        # that its recipe is the README's `normcmp run configs/demo.json`
        cd "$W" || exit 1
        in_clone make -n demo
        cd "$R" || exit 1
        _cmd="README.md:$no: make -n demo"
        printf '%s\n' "normcmp run configs/demo.json" >>"$T/ran"
        if [ "$_status" -eq 0 ] && [ "$(cat "$T/.out")" = "build/normcmp run configs/demo.json" ]; then
            _ok
            typed "$no" "$cmd"
            for f in out/demo/report.json out/demo/index.html; do expect_file "$W/$f"; done
        else
            _bad "make -n demo: $(head -c 300 "$T/.out"), expected only build/normcmp run configs/demo.json"
        fi
        ;;
    "make help")
        typed "$no" "$cmd"
        _cmd="README.md:$no: make help"
        if grep -q "^make demo " "$T/log/$no.out"; then _ok; else _bad "make help lists no make demo"; fi
        ;;
    make\ *)
        _cmd=$cmd
        _bad "README.md:$no: '$cmd': a make target this test neither runs nor lists (not_run)"
        ;;
    *'$SLURM_ARRAY_TASK_ID'*)
        # the job script's line, as each task of the array runs it
        n=$(printf '%s\n' "$cmd" | sed -n 's|.*--shard "$SLURM_ARRAY_TASK_ID/\([0-9]*\)".*|\1|p')
        if [ -n "$n" ]; then _ok; else _bad "README.md:$no: no --shard \"\$SLURM_ARRAY_TASK_ID/N\""; fi
        k=1
        while [ "$k" -le "${n:-0}" ]; do
            typed "$no" "$cmd" SLURM_ARRAY_TASK_ID="$k"
            k=$((k + 1))
        done
        ;;
    *) typed "$no" "$cmd" ;;
    esac
done 3<"$T/cmds"

# merge's report has the numbers of the unsharded run of the same layers
# (the quickstart's fit; README "Whole models")
if [ -f "$W/out/vit.merged/report.json" ]; then
    run /usr/bin/python3 -c "import json, sys
a, b = (json.load(open(f'$W/out/{d}/report.json'))['run'] for d in ('vit', 'vit.merged'))
sys.exit(a != b)"
    expect_status 0
elif [ "$have_torch" = 1 ]; then
    _cmd="README.md"
    _bad "no out/vit.merged/report.json: the README's shards of out/vit.json and their merge"
fi

# the quickstart's summary as quoted, against what the fit before the quote
# printed at 80 columns
q=$(grep -n '^    layer  *verdict' README.md | head -n 1 | cut -d: -f1)
fit=$(awk -F "$tab" -v q="${q:-0}" '$1 < q && $3 ~ /^(build\/)?normcmp fit / { n = $1 } END { print n }' "$T/cmds")
if [ -z "$q" ] || [ -z "$fit" ]; then
    _cmd="README.md"
    _bad "no quoted summary (an indented block 'layer  verdict ...') after a normcmp fit command"
elif [ "$have_torch" = 1 ]; then
    run /usr/bin/python3 tests/cli/readme_blocks.py summary README.md "$T/log/$fit.out"
    expect_status 0
else
    skip "the quickstart's summary (README.md:$q)" python3-torch
fi

# the Hugging Face snippet: the dump holds the stand-in's five LlamaRMSNorms
# with their eps, the report five layers, each with its bootstrap over at
# least 20 whole sequences of 64 tokens (the tokens_per_sequence the dump
# recorded); the stand-in's tokenizer gives no more tokens than the real one
if [ "$have_torch" = 1 ]; then
    run /usr/bin/python3 - "$W" <<'PY'
import json, struct, sys
w = sys.argv[1]
raw = open(f"{w}/out/hf.safetensors", "rb").read()
meta = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"]
names = [f"model.layers.{i}.{n}" for i in (0, 1) for n in ("input_layernorm", "post_attention_layernorm")]
for n in names + ["model.norm"]:
    got = (meta.get(f"{n}.class"), meta.get(f"{n}.norm"), float(meta.get(f"{n}.eps", "nan")))
    if got != ("LlamaRMSNorm", "rmsnorm", 1e-5):
        sys.exit(f"out/hf.safetensors: {n}: {got}, expected LlamaRMSNorm, rmsnorm, eps 1e-05")
rep = json.load(open(f"{w}/out/hf/report.json"))
if [l["name"] for l in rep["layers"]] != names + ["model.norm"]:
    sys.exit(f"out/hf/report.json: layers {[l['name'] for l in rep['layers']]}")
for l in rep["layers"]:
    b = l["bootstrap"]
    got = (b.get("status"), b.get("blocks", 0) >= 20, b.get("token_block_source"),
           b.get("tokens_per_block"))
    if got != ("ok", True, "metadata", 64):
        sys.exit(f"out/hf/report.json: {l['name']}: bootstrap {b.get('status')}, "
                 f"{b.get('blocks')} blocks of {b.get('tokens_per_block')} tokens "
                 f"({b.get('token_block_source')}), expected ok, >= 20 blocks of 64 tokens "
                 "(the dump's tokens_per_sequence)")
PY
    expect_status 0
else
    skip "the Hugging Face snippet's dump and report" python3-torch
fi

# the notebook snippet, as typed, from the clone: 12 verdicts, figures
if [ "$have_torch" = 1 ]; then
    cd "$W" || exit 1
    in_clone NORMCMP_BIN="$NC" /usr/bin/python3 -c "import os
ns = {'__name__': '__main__'}
exec(compile(open('$T/notebook.py').read(), 'README.md (notebook)', 'exec'), ns)
res = ns['res']
try:
    assert len(res.verdicts) == 12, f'{len(res.verdicts)} verdicts, expected 12'
    v = res.verdicts[0]
    assert v['kind'] in ('saturating', 'strongly saturating', 'near-linear', 'undecided'), v
    assert v['verdict'].startswith(v['kind'] + ': '), v
    assert res.figures and all(os.path.isfile(f) for f in res.figures), res.figures
finally:
    res.cleanup()"
    cd "$R" || exit 1
    _cmd="the notebook snippet (README.md)"
    expect_status 0
else
    skip "the notebook snippet" python3-torch
fi

done_tests
