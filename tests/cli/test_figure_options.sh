# test_figure_options.sh - the figure options of plot and sweep and their
# config keys (docs/figures.md): --title, --xlim/--ylim, --labels, the
# sweeps' --size/--dpi/--legend/--title and the sweep section's keys, the
# sweep legend's theory formula per norm and its colours (none a fit's); a
# figure that cannot be drawn leaves the others drawn (exit 0, one line
# saying so), and only when none can is that an error.
. tests/cli/lib.sh

# the PNG text chunk KEY of FILE, on stdout
meta() {
    /usr/bin/python3 -c "import sys; from PIL import Image; print(Image.open(sys.argv[1]).info.get(sys.argv[2], ''))" "$1" "$2"
}

f="$T/late.npy"
"$NC" synth -o "$f" --preset late --tokens 256 --dim 64 --seed 3 >/dev/null
"$NC" synth -o "$T/early.npy" --preset early --tokens 256 --dim 64 --seed 1 >/dev/null
"$NC" synth -o "$T/mid.npy" --preset middle --tokens 256 --dim 64 --seed 2 >/dev/null

# --title TEXT and none
run "$NC" plot "$f" --figure scatter --title "Layer 7 of a ViT" --out "$T/t1" --quiet --no-jacobian
expect_status 0
[ "$(meta "$T/t1/late_scatter.png" Title)" = "Layer 7 of a ViT" ] && _ok || _bad "title: $(meta "$T/t1/late_scatter.png" Title)"
run "$NC" plot "$f" --figure scatter,tanh-family --title none --out "$T/t2" --quiet --no-jacobian
expect_status 0
if meta "$T/t2/late_scatter.png" Layout | grep -q "panel0.title"; then _bad "a title drawn with --title none"; else _ok; fi
if meta "$T/t2/tanh_family.png" Layout | grep -q "title"; then _bad "tanh-family titled with --title none"; else _ok; fi

# --xlim / --ylim: the panel's range; bad ones refused before any work
run "$NC" plot "$f" --figure scatter,jacobian --xlim -2.5,4 --ylim=-3,3.25 --out "$T/lim" --quiet --no-jacobian
expect_status 0
for k in scatter jacobian; do
    case "$(meta "$T/lim/late_$k.png" Panels)" in
    *"; x -2.5 4; y -3 3.25") _ok ;;
    *) _bad "$k: limits not the panel's range: $(meta "$T/lim/late_$k.png" Panels)" ;;
    esac
done
case "$(meta "$T/lim/late_scatter.png" Layout)" in
*"points outside"* | *"beyond"*) _bad "a scatter note about marks beyond the limits" ;;
*) _ok ;;
esac
run "$NC" plot "$f" --xlim 3,1 --out "$T/bad"
expect_status 2
expect_err "normcmp: plot: --xlim: expected LO,HI (numbers, LO < HI), got '3,1' (see 'normcmp plot --help')"
run "$NC" plot "$f" --ylim 1,nan --out "$T/bad"
expect_status 2
expect_err "normcmp: plot: --ylim: expected LO,HI (numbers, LO < HI), got '1,nan' (see 'normcmp plot --help')"
run "$NC" fit "$f" --xlim 1,2 --out "$T/bad"
expect_status 2
expect_err_has "belong to 'normcmp plot'"
cat >"$T/badlim.json" <<JSON
{"name": "b", "layers": [{"file": "late.npy"}], "figures": [{"type": "scatter", "xlim": [2, 1]}]}
JSON
run "$NC" run "$T/badlim.json" --out "$T/bad"
expect_status 2
expect_err "normcmp: $T/badlim.json: figures[0].xlim: expected [lo, hi] with finite lo < hi, or \"auto\""
cat >"$T/badlab.json" <<JSON
{"name": "b", "layers": [{"file": "late.npy"}], "figures": [{"type": "alpha-std", "labels": "some"}]}
JSON
run "$NC" run "$T/badlab.json" --out "$T/bad"
expect_status 2
expect_err "normcmp: $T/badlab.json: figures[0].labels: expected \"auto\" or \"none\""

# --labels none: alpha-std without layer names (and no count of them)
run "$NC" plot "$T/early.npy" "$T/mid.npy" "$f" --figure alpha-std --out "$T/lab" --quiet --no-jacobian
expect_status 0
if meta "$T/lab/alpha_std.png" Layout | grep -q "panel0.label"; then _ok; else _bad "alpha-std has no labels"; fi
run "$NC" plot "$T/early.npy" "$T/mid.npy" "$f" --figure alpha-std --labels none --out "$T/nolab" --quiet --no-jacobian
expect_status 0
if meta "$T/nolab/alpha_std.png" Layout | grep -q "panel0.label\|named"; then _bad "labels with --labels none"; else _ok; fi

# a figure that cannot be drawn: the others are, and stderr says which
run "$NC" plot "$f" --figure scatter,alpha-std --fits linear --out "$T/ref" --no-jacobian
expect_status 0
expect_err "normcmp: not drawn: figure 'alpha-std': no layer has a DyT fit"
expect_file "$T/ref/late_scatter.png"
expect_no_file "$T/ref/alpha_std.png"
# a warning: -q keeps stderr for errors
run "$NC" plot "$f" --figure scatter,alpha-std --fits linear --out "$T/ref" --quiet --no-jacobian
expect_status 0
if [ -s "$T/.err" ]; then _bad "--quiet: $(cat "$T/.err")"; else _ok; fi
check "report.json lists the scatter" grep -q '"late_scatter.png"' "$T/ref/report.json"
run "$NC" plot "$f" --figure alpha-std --fits linear --out "$T/ref2" --quiet --no-jacobian
expect_status 2
expect_err "normcmp: figure 'alpha-std': no layer has a DyT fit"
expect_no_file "$T/ref2/report.json"

# sweeps: sized, titled and placed by flags or by the sweep section's keys
cat >"$T/sw.json" <<JSON
{"name": "sw", "layers": [{"file": "late.npy", "label": "ln"},
                          {"file": "mid.npy", "label": "rms", "norm": "rmsnorm"}],
 "sweep": {"alpha": "auto", "C": "auto", "steps": 24, "width": 6.9, "height": 3, "dpi": 100,
           "title": "none"}}
JSON
run "$NC" sweep "$T/sw.json" --out "$T/sw" --quiet
expect_status 0
check "sweep figure at 6.9 x 3 in, 100 dpi" /usr/bin/python3 -c "
from PIL import Image; im = Image.open('$T/sw/ln_sweep_alpha.png'); assert im.size == (690, 300), im.size"
if meta "$T/sw/ln_sweep_alpha.png" Layout | grep -q "figure.title"; then _bad "a sweep title with \"title\": \"none\""; else _ok; fi
run "$NC" sweep "$T/sw.json" --out "$T/sw2" --quiet --size 3.3x2.5 --dpi 200 --title "DyT error" --legend none
expect_status 0
check "sweep --size/--dpi" /usr/bin/python3 -c "
from PIL import Image; im = Image.open('$T/sw2/rms_sweep_C.png'); assert im.size == (660, 500), im.size"
[ "$(meta "$T/sw2/rms_sweep_C.png" Title)" = "DyT error" ] && _ok || _bad "sweep --title: $(meta "$T/sw2/rms_sweep_C.png" Title)"
if meta "$T/sw2/rms_sweep_C.png" Layout | grep -q "^legend"; then _bad "a legend with --legend none"; else _ok; fi
run "$NC" sweep "$T/sw.json" --out "$T/bad" --legend upper-left
expect_status 2
expect_err_has "--legend: expected auto, none or outside"
run "$NC" run "$T/sw.json" --out "$T/bad" --size 3x2
expect_status 2
expect_err_has "size the sweep figures of 'normcmp sweep'"
# the theory value's formula is the norm's own (LayerNorm sqrt(d-1), RMSNorm sqrt(d))
case "$(meta "$T/sw/ln_sweep_alpha.png" Legend)" in
*"theory α = 1/(ρ√(d−1)) = "*) _ok ;;
*) _bad "LayerNorm sweep legend: $(meta "$T/sw/ln_sweep_alpha.png" Legend)" ;;
esac
case "$(meta "$T/sw/rms_sweep_alpha.png" Legend)" in
*"theory α = 1/(ρ√d) = "*) _ok ;;
*) _bad "RMSNorm sweep legend: $(meta "$T/sw/rms_sweep_alpha.png" Legend)" ;;
esac
case "$(meta "$T/sw/rms_sweep_C.png" Legend)" in
*"theory C = dρ² = "*) _ok ;;
*) _bad "RMSNorm sweep C legend: $(meta "$T/sw/rms_sweep_C.png" Legend)" ;;
esac
# no colour of a fit (Okabe-Ito, docs/figures.md) means something else here
for png in "$T"/sw/*_sweep_*.png; do
    if meta "$png" Layout | grep -qi "^colour .* #\(d55e00\|009e73\|0072b2\|cc79a7\|555555\)"; then
        _bad "$(basename "$png"): a fit's colour in a sweep"
    else
        _ok
    fi
done

done_tests
