# test_index_html.sh - index.html beside report.json (docs/whole_models.md),
# checked in a real browser: Debian's chromium, headless, loads the page
# from disk, runs its inline script (sorting by "#sort=-r2_dyt" and a check
# of the decoded images), and takes a screenshot that must show the page.
. tests/cli/lib.sh

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ] || ! have_py PIL; then
    [ -x "$CHROMIUM" ] || skip "index.html in a browser ($CHROMIUM)" chromium
    have_py PIL || skip "index.html's screenshot" python3-pil
    done_tests
    exit
fi
_ok
cat >"$T/c.json" <<JSON
{
  "name": "browse",
  "layers": [
    {"synth": {"preset": "early", "tokens": 400, "dim": 64, "seed": 1}, "label": "a-early"},
    {"synth": {"preset": "late", "tokens": 400, "dim": 64, "seed": 3}, "label": "b.late"},
    {"synth": {"preset": "middle", "tokens": 400, "dim": 64, "seed": 2}, "label": "c middle"}
  ],
  "figures": [{"type": "scatter"}, {"type": "jacobian"}, {"type": "alpha-std"}]
}
JSON
run "$NC" run "$T/c.json" --out "$T/out" --quiet
expect_status 0
expect_file "$T/out/index.html"
# self-contained: no network, no external script or style sheet
if grep -Eiq 'https?:|<link|src="//|@import' "$T/out/index.html"; then
    _bad "index.html refers to something outside the folder"
else
    _ok
fi

# chromium: as root it needs --no-sandbox; a fresh profile; no stdin
browse() {
    timeout 120 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$T/profile" --virtual-time-budget=5000 "$@" </dev/null 2>>"$T/chromium.log"
}
browse --dump-dom "file://$T/out/index.html#sort=-r2_dyt" >"$T/dom.html"
browse --hide-scrollbars --window-size=1200,900 --screenshot="$T/shot.png" \
    "file://$T/out/index.html" >/dev/null
run /usr/bin/python3 - "$T/out" "$T/dom.html" "$T/shot.png" <<'PY'
import json, os, sys
from html.parser import HTMLParser
from PIL import Image

out, dom, shot = sys.argv[1:4]
rep = json.load(open(os.path.join(out, "report.json")))
check = {}
rows = []
class P(HTMLParser):
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "nc-check":
            check.update(a)
        if tag == "tr" and "data-name" in a:
            rows.append(a["data-name"])
P().feed(open(dom).read())
bad = []
pngs = [f for f in rep["outputs"] if f.endswith(".png")]
if check.get("data-rows") != str(len(rep["layers"])):
    bad.append(f"rows {check.get('data-rows')} vs {len(rep['layers'])} layers")
if check.get("data-images") != str(len(pngs)) or check.get("data-decoded") != str(len(pngs)):
    bad.append(f"images {check.get('data-images')}, decoded {check.get('data-decoded')}, "
               f"expected {len(pngs)}")
want = [l["name"] for l in sorted(rep["layers"], key=lambda l: -l["fits"]["dyt"]["r2"])]
if check.get("data-sorted") != "r2_dyt desc" or rows != want:
    bad.append(f"sorted {check.get('data-sorted')}: {rows} vs {want}")
import html as H
text = H.unescape(open(dom).read())
verdicts = [rep["run"]["verdict"]] + [p["verdict"] for p in rep["run"]["per_layer"]]
missing = [v for v in verdicts if v not in text]
if missing:
    bad.append(f"verdicts not on the page: {missing[:2]}")
im = Image.open(shot).convert("RGB")
if im.size != (1200, 900):
    bad.append(f"screenshot size {im.size}")
colours = im.getcolors(1 << 20) or []
if len(colours) < 50:  # a blank or error page has a handful of colours
    bad.append(f"screenshot has {len(colours)} colours")
print("ok" if not bad else "; ".join(bad))
sys.exit(1 if bad else 0)
PY
expect_status 0
expect_out_has ok

done_tests
