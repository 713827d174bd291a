# test_index_html.sh - index.html beside report.json (docs/whole_models.md),
# checked in a real browser: Debian's chromium, headless, loads the page
# from disk, runs its inline script (sorting by "#sort=-r2_dyt" and a check
# of the decoded images), and takes a screenshot that must show the page.
# Then a run of 44 layers (a whole model) is loaded in a window 400 px wide
# (a phone) and one 1400 px wide (a laptop), measured from outside: the
# page must not be wider than the window (the table scrolls in its own
# box), no image wider than the window or past its edge outside that box,
# the run's verdict short (no list of layer names, which are in the
# table), the page's title the run's name, and each screenshot a page.
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

# a whole model, at 400 and 1400 px
/usr/bin/python3 - "$T/m44.json" <<'PY'
import json, sys
layers = []
for k in range(44):
    d = 256 if k < 20 else 768 if k < 36 else 64
    layers.append({"synth": {"preset": ("early", "middle", "late")[k % 3], "tokens": 64, "dim": d,
                             "seed": k + 1, "scale_median": 0.4 * 1.1 ** k},
                   "label": f"blocks.{k}.norm"})
json.dump({"name": "whole-model run", "jacobian": {"enabled": False},
           "fits": ["linear", "dyt", "dyisru"], "layers": layers,
           "figures": [{"type": "scatter", "layers": ["blocks.1*"], "width": 3.3, "height": 2.5,
                        "dpi": 60},
                       {"type": "alpha-std"}, {"type": "alpha-depth"}]},
          open(sys.argv[1], "w"))
PY
run "$NC" run "$T/m44.json" --out "$T/m44" --quiet
expect_status 0
# The page is measured from outside, in an iframe of the width (headless
# chromium's windows are at least 500 px wide): its window's width, its own
# width, and every image wider than the window, or past its right edge
# unless inside a box that scrolls sideways.
cat >"$T/m44/probe.html" <<'HTML'
<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe id="f" src="index.html" style="height:900px;border:0;display:block"></iframe>
<p id="nc-probe"></p><script>
var f = document.getElementById('f');
f.style.width = location.hash.slice(1) + 'px';
f.addEventListener('load', function () {
  var d = f.contentDocument, w = d.documentElement.clientWidth, over = 0, im = d.images;
  for (var k = 0; k < im.length; k++) {
    var r = im[k].getBoundingClientRect(), boxed = false;
    for (var e = im[k].parentElement; e && e !== d.body; e = e.parentElement) {
      var o = f.contentWindow.getComputedStyle(e).overflowX;
      boxed = boxed || o === 'auto' || o === 'scroll';
    }
    if (r.width > w + 0.5 || (!boxed && r.right > w + 0.5)) over++;
  }
  var p = document.getElementById('nc-probe');
  p.setAttribute('data-viewport', w);
  p.setAttribute('data-page-width', d.documentElement.scrollWidth);
  p.setAttribute('data-images-over', over);
  p.setAttribute('data-rows', d.getElementById('layers').tBodies[0].rows.length);
});</script></body></html>
HTML
for w in 400 1400; do
    win=$((w + 20))
    [ $win -lt 500 ] && win=500
    browse --allow-file-access-from-files --dump-dom --window-size=$win,900 \
        "file://$T/m44/probe.html#$w" >"$T/probe$w.html"
    browse --dump-dom --window-size=1400,900 "file://$T/m44/index.html" >"$T/dom$w.html"
    browse --allow-file-access-from-files --hide-scrollbars --window-size=$win,900 \
        --screenshot="$T/shot$w.png" "file://$T/m44/probe.html#$w" >/dev/null
    run /usr/bin/python3 - "$T/m44" "$T/dom$w.html" "$T/shot$w.png" "$w" "$T/probe$w.html" <<'PY'
import html as H, json, os, re, sys
from html.parser import HTMLParser
from PIL import Image

out, dom, shot, w, probe = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
rep = json.load(open(os.path.join(out, "report.json")))
check = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', open(probe).read().split('id="nc-probe"')[1].split(">")[0]))
title, verdict = [], []
class P(HTMLParser):
    where = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "title" or a.get("id") == "run-verdict":
            self.where = tag
        if tag == "details":
            self.where = None
    def handle_endtag(self, tag):
        if tag in ("title", "ul"):
            self.where = None
    def handle_data(self, data):
        if self.where == "title":
            title.append(data)
        elif self.where:
            verdict.append(data)
P().feed(open(dom).read())
bad = []
vw, page = int(check.get("data-viewport", 0)), int(check.get("data-page-width", 10 ** 6))
if not (w - 20 <= vw <= w):  # the iframe's width, less a scroll bar
    bad.append(f"viewport {vw} px in a {w} px window")
if page > vw:
    bad.append(f"the page is {page} px wide in a {vw} px window")
if check.get("data-images-over") != "0":
    bad.append(f"{check.get('data-images-over')} images wider than the window or past it")
if "".join(title).strip() != "whole-model run \u2014 normcmp":
    bad.append(f"title {''.join(title)!r}")
shown = H.unescape("".join(verdict))
names = [l["name"] for l in rep["layers"]]
listed = [n for n in names if re.search(re.escape(n) + r"\b", shown)]
if listed:
    bad.append(f"the run's verdict lists {len(listed)} layer names: {listed[:3]}")
if not 40 < len(shown) <= 1200:
    bad.append(f"the run's verdict is {len(shown)} characters")
if check.get("data-rows") != "44":
    bad.append(f"{check.get('data-rows')} rows")
im = Image.open(shot).convert("RGB").crop((0, 0, w, 900))
if len(im.getcolors(1 << 20) or []) < 50:
    bad.append(f"screenshot of {w} px: {len(im.getcolors(1 << 20) or [])} colours")
print("ok" if not bad else f"{w} px: " + "; ".join(bad))
sys.exit(1 if bad else 0)
PY
    expect_status 0
    expect_out_has ok
done

done_tests
