# docs/records.md documents every field --json prints, and documents nothing it does not:
# the keys user/report/json.c writes (literal ones, and those named by the cause and loss
# tables), every value of its enumerated fields, and every key a replay of a recording prints.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DOC=$ROOT/docs/records.md
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# the string literals of one C function's body: "x" of every name table
names_of() {	# file function
	awk -v f="$2" '$0 ~ "^[a-z].*[ *]" f "\\(" { on = 1 } on { print } on && /^}/ { exit }' \
		"$ROOT/$1" | grep -oE '"[a-z][a-z0-9_]*"' | tr -d '"'
}

# keys: the first literal of every writer call on the JSON writer, and the table-named ones
grep -oE '\(w, "[a-z][a-z0-9_]*"' "$ROOT/user/report/json.c" | sed 's/.*"\(.*\)"/\1/' \
	>"$W/keys"
names_of user/core/request.c stall_cause_name >>"$W/keys"	# parts_ns, summary stalls
names_of user/core/stats.c lost_kind_name >>"$W/keys"		# summary lost
sort -u -o "$W/keys" "$W/keys"
[ "$(wc -l <"$W/keys")" -gt 100 ] || fail "found only $(wc -l <"$W/keys") keys in json.c"

# what the tables list: the backticked names of their first column
grep -E '^\| `' "$DOC" | cut -d'|' -f2 | grep -oE '`[a-z][a-z0-9_]*`' | tr -d '`' |
	sort -u >"$W/doc"
# ... and every backticked word anywhere, for the values of enumerated fields
grep -oE '`[a-z][a-z0-9_:]*`' "$DOC" | tr -d '`' | sort -u >"$W/words"

missing=$(comm -23 "$W/keys" "$W/doc")
[ -z "$missing" ] || fail "json.c writes fields docs/records.md does not list: $missing"
echo "ok: every key of json.c ($(wc -l <"$W/keys")) is in docs/records.md's tables"

# the values of "type" and of every field printed through a name function
grep -oE '"type", "[a-z]+"' "$ROOT/user/report/json.c" | sed 's/.*, "\(.*\)"/\1/' >"$W/values"
{
	names_of user/core/request.c body_format_name
	names_of user/core/request.c abort_reason_name
	names_of user/core/request.c wake_kind_name
	names_of user/core/session.c target_event_name
	names_of user/core/session.c target_why_name
	names_of user/core/proxy.c pair_by_name
	names_of user/core/attribute.c marker_kind_name
} >>"$W/values"
grep -oE '"direction", r->client \? "[a-z]+" : "[a-z]+"' "$ROOT/user/report/json.c" |
	grep -oE '"(client|server)"' | tr -d '"' >>"$W/values"
grep -oE '"mode", s->aggregate \? "[a-z]+" : "[a-z]+"' "$ROOT/user/report/json.c" |
	grep -oE '"[a-z]+"' | grep -v mode | tr -d '"' >>"$W/values"
sort -u -o "$W/values" "$W/values"
[ "$(wc -l <"$W/values")" -gt 30 ] || fail "found only $(wc -l <"$W/values") enumerated values"
missing=$(comm -23 "$W/values" "$W/words")
[ -z "$missing" ] || fail "values json.c prints that docs/records.md does not name: $missing"
echo "ok: every enumerated value ($(wc -l <"$W/values")) is named in docs/records.md"

# no table row for a field that is not written (a rename, a field gone)
stale=$(comm -13 "$W/keys" "$W/doc" | grep -vxFf "$W/values")
[ -z "$stale" ] || fail "docs/records.md lists fields json.c does not write: $stale"
echo "ok: docs/records.md lists no field json.c does not write"

# what a real recording's replay prints: every key, at any depth, is documented
rec=$ROOT/tests/fuzz/seeds/fuzz_record/tokensim_4req.ttr
"$ROOT/tokentrace" -r "$rec" --json >"$W/replay.jsonl" 2>"$W/replay.err" ||
	fail "replay of $rec: $(cat "$W/replay.err")"
python3 - "$W/replay.jsonl" "$W/doc" <<'PY' || exit 1
import json, sys
doc = set(open(sys.argv[2]).read().split())
seen, types = set(), set()
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            seen.add(k)
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
for line in open(sys.argv[1]):
    o = json.loads(line)
    types.add(o["type"])
    walk(o)
if not {"ready", "request", "summary"} <= types:
    sys.exit(f"FAIL: the replay printed only {sorted(types)}")
missing = sorted(seen - doc)
if missing:
    sys.exit(f"FAIL: the replay prints fields docs/records.md does not list: {missing}")
print(f"ok: the {len(seen)} keys a replay prints are all in docs/records.md")
PY
