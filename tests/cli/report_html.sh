# --report's HTML in a real browser, root-free: the showcase report (test_html --showcase,
# written through the output itself) is rendered by headless Chromium with every way out to
# the network closed; the DOM it built has every request's timeline, a stall mark and an
# explained line per stall, and nothing that loads from anywhere; a screenshot is kept in
# tests/out/report_html.png for a person to look at.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FIX=$ROOT/.output/tests/test_html
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

[ -x "$FIX" ] || fail "$FIX not built (make test-bins)"
command -v chromium >/dev/null || fail "chromium is not installed (tools/install-deps.sh)"
"$FIX" --showcase "$W/report.html" || fail "the showcase report was not written"

# no network: a proxy that does not exist and a resolver that finds nothing, on top of the
# flags that keep Chromium's own services quiet
chrome() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
		--disable-component-update --disable-sync --no-first-run \
		--proxy-server=127.0.0.1:9 --host-resolver-rules='MAP * ~NOTFOUND' \
		--user-data-dir="$W/profile" "$@" "file://$W/report.html" 2>"$W/chrome.err"
}
chrome --dump-dom >"$W/dom.html" || { cat "$W/chrome.err"; fail "chromium --dump-dom failed"; }
mkdir -p "$ROOT/tests/out"
chrome --window-size=1100,2400 --hide-scrollbars --screenshot="$W/shot.png" >/dev/null ||
	fail "chromium --screenshot failed"
cp "$W/shot.png" "$ROOT/tests/out/report_html.png"

python3 - "$W/dom.html" "$W/shot.png" <<'EOF' || exit 1
import re, struct, sys, zlib
from html.parser import HTMLParser

dom = open(sys.argv[1], encoding="utf-8").read()

class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.reqs = []          # per section.req: its attrs, svgs, stall rects, stall lines
        self.loads = []
        self.cur = None
        self.in_li = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        for k in ("src", "srcset", "data", "poster"):
            if k in a:
                self.loads.append((tag, k, a[k]))
        if "href" in a and not a["href"].startswith("#"):
            self.loads.append((tag, "href", a["href"]))
        if tag in ("script", "link", "iframe", "img", "object", "embed"):
            self.loads.append((tag, "", ""))
        if tag == "section" and "req" in cls:
            self.cur = {"n": a.get("data-req"), "stalls": int(a.get("data-stalls", -1)),
                        "timelines": 0, "marks": [], "lines": []}
            self.reqs.append(self.cur)
        elif self.cur is not None and tag == "svg" and "timeline" in cls:
            self.cur["timelines"] += 1
            if a.get("data-req") != self.cur["n"]:
                sys.exit(f"FAIL: request {self.cur['n']}'s timeline says {a.get('data-req')}")
        elif self.cur is not None and tag == "rect" and "stall" in cls:
            self.cur["marks"].append(a.get("data-stall"))
        elif self.cur is not None and tag == "li" and "stall-line" in cls:
            self.cur["lines"].append([a.get("data-stall"), ""])
            self.in_li = True

    def handle_endtag(self, tag):
        if tag == "li":
            self.in_li = False
        if tag == "section":
            self.cur = None

    def handle_data(self, d):
        if self.in_li and self.cur is not None:
            self.cur["lines"][-1][1] += d

p = P()
p.feed(dom)
if p.loads:
    sys.exit(f"FAIL: the page loads or links out: {p.loads[:5]}")
# the showcase: six requests; #2 has two stalls, #5 one
want = {"1": 0, "2": 2, "3": 0, "4": 0, "5": 1, "6": 0}
got = {r["n"]: r for r in p.reqs}
if sorted(got) != sorted(want):
    sys.exit(f"FAIL: requests in the DOM: {sorted(got)}, expected {sorted(want)}")
for n, k in want.items():
    r = got[n]
    if r["timelines"] != 1:
        sys.exit(f"FAIL: request {n} has {r['timelines']} timelines")
    if r["stalls"] != k or len(r["marks"]) != k or len(r["lines"]) != k:
        sys.exit(f"FAIL: request {n}: {k} stalls expected, data-stalls {r['stalls']}, "
                 f"{len(r['marks'])} marks, {len(r['lines'])} lines")
    for (i, (mark, (line_n, text))) in enumerate(zip(r["marks"], r["lines"])):
        if mark != str(i + 1) or line_n != str(i + 1):
            sys.exit(f"FAIL: request {n}: stall {i + 1} numbered {mark}/{line_n}")
        if not re.search(r"after token \d+, mostly \w+: .+\(.+\)", text):
            sys.exit(f"FAIL: request {n}: stall {i + 1}'s line does not explain: {text!r}")
        print(f"ok: request {n} stall {i + 1}: {' '.join(text.split())[:100]}")
# the hostile model name is text in the DOM, not an element
if "<script>alert(1)</script>" not in dom.replace("&lt;", "<").replace("&gt;", ">"):
    sys.exit("FAIL: the hostile model name is not shown as text")
if re.search(r"<script", dom, re.I):
    sys.exit("FAIL: a script element in the DOM")

# the screenshot: a PNG of the asked size, not one colour
png = open(sys.argv[2], "rb").read()
if png[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("FAIL: the screenshot is not a PNG")
w, h = struct.unpack(">II", png[16:24])
if (w, h) != (1100, 2400):
    sys.exit(f"FAIL: screenshot {w}x{h}")
idat, pos = b"", 8
while pos < len(png):
    n, kind = struct.unpack(">I4s", png[pos:pos + 8])
    if kind == b"IDAT":
        idat += png[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
if len(set(raw[i] for i in range(0, len(raw), 97))) < 8:
    sys.exit("FAIL: the screenshot is blank")
print(f"ok: {len(p.reqs)} timelines, {sum(len(r['marks']) for r in p.reqs)} stall marks, "
      f"screenshot {w}x{h} in tests/out/report_html.png")
EOF
