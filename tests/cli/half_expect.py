"""half_expect.py REPORT.json STDERR PREC VARIANT - what the real-output check
must say about the real layers of make_half_dumps.py (one file, one run of
`normcmp fit`): per layer, the kind it is, whether a warning names it, the
status, the sources, and eps against the interval the data allow. Prints
each failed expectation; exit status 1 if any (tests/cli/test_normcheck_half.sh).
"""
import json
import sys

report, errfile, prec, variant = sys.argv[1:5]
layers = json.load(open(report))["layers"]
err = open(errfile).read()
KIND = {"ln00": "layernorm", "ln05": "layernorm", "ln11": "layernorm",
        "attn0": "rmsnorm", "final": "rmsnorm"}
EPS = 1e-5
bad = []


def expect(ok, what, L):
    if not ok:
        c = L.get("real_output_check", {})
        bad.append(f"{prec}/{variant} {L['name']}: {what} (norm {L['norm']} eps {L['eps']:g} "
                   f"{L['norm_source']}/{L['eps_source']} status {c.get('status')}; "
                   f"{c.get('message', '')[:300]})")


def allows(e, eps):
    iv = e.get("interval")
    return iv is None or iv[0] is None or iv[0] <= eps <= iv[1]


for L in layers:
    name, c = L["name"], L["real_output_check"]
    d = c.get("detection", {})
    e = d.get("eps", {})
    kind = KIND[name]
    warned = f"warning: {name}:" in err
    # the kind is the layer's in every variant, and the data tell it apart
    expect(L["norm"] == kind, f"norm is {kind}", L)
    expect(d.get("kind_verdict") == "identified" and d.get("kind") == kind,
           f"the data identify {kind}", L)
    expect(c.get("agrees") is True and c.get("q", 2) <= c.get("q_max", 0),
           "the norm used reproduces the output to rounding", L)
    expect(allows(e, L["eps"]), "the eps used is inside the data's interval", L)
    if variant == "right":
        expect(c["status"] == "ok" and not warned, "no false alarm: status ok, no warning", L)
        expect(L["eps"] == EPS and L["eps_source"] == "metadata", "the metadata's eps kept", L)
    elif variant == "wrongkind":
        expect(c["status"] == "detected" and warned and d.get("kind_contradicted") is True,
               "the metadata's wrong kind detected, with a warning", L)
        expect(L["norm_source"] == "detected", "kind source detected", L)
        # the metadata's right eps survives the wrong kind (it was replaced
        # by an unsnapped 9.621e-06 +- 5.8e-08 on ln05 at float32)
        expect(L["eps"] == EPS and L["eps_source"] == "metadata", "the metadata's eps kept", L)
    elif variant == "eps100":
        outside = not allows(e, 1e-3)
        expect(d.get("eps_contradicted") is outside and warned is outside,
               "eps 1e-3 is flagged exactly when the data exclude it", L)
        if prec in ("f32", "f16"):
            expect(outside and L["eps"] != 1e-3 and L["eps_source"] == "detected",
                   f"eps 100x off detected at {prec}", L)
    elif variant == "nometa":
        expect(not warned and c["status"] in ("ok", "detected"), "no warning", L)
        expect(L["norm_source"] == ("default" if kind == "layernorm" else "detected"),
               "the kind from the data where the default is wrong", L)
    elif variant == "outonly":
        expect(not warned and d.get("weight_source") == "estimated"
               and d.get("bias_source") == ("estimated" if kind == "layernorm" else "none"),
               "the weight (and LayerNorm's bias) estimated, no warning", L)
        expect(0 < d.get("weight_rel_se", 1) < 1e-2, "the estimated weight is precise", L)
    if prec.endswith("after") and variant != "outonly":
        expect(d.get("rounded_after") is True and d.get("weight_source") == "estimated",
               "rounded after the model: the weight re-estimated", L)

for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
