# The man page renders without a warning and documents every option --help lists;
# make install puts the binary and the man page under DESTDIR/PREFIX.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

if command -v groff >/dev/null; then
	warn=$(groff -man -ww -z "$ROOT/docs/tokentrace.8" 2>&1)
	[ -z "$warn" ] || fail "man page warnings: $warn"
	echo "ok: docs/tokentrace.8 renders without warnings"
else
	echo "note: groff missing, man page not rendered"
fi
sed 's/\\-/-/g' "$ROOT/docs/tokentrace.8" >"$W/man.txt"	# \- is a hyphen in roff
for opt in $("$ROOT/tokentrace" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
	grep -qF -- "$opt" "$W/man.txt" || fail "$opt is not in the man page"
done
echo "ok: every option of --help is in the man page"
help_opts=$("$ROOT/tokentrace" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u)
for opt in $(grep -oE -- '--[a-z][a-z-]+' "$W/man.txt" | sort -u); do
	echo "$help_opts" | grep -qxF -- "$opt" || fail "the man page has $opt, --help does not"
done
echo "ok: the man page names no option --help lacks"

# the README's table of options: every option by its long or short name, and no other
sed -n '/^| option/,/^$/p' "$ROOT/README.md" >"$W/readme.txt"
[ -s "$W/readme.txt" ] || fail "no table of options in the README"
"$ROOT/tokentrace" --help | sed -nE 's/^      (--[a-z][a-z-]+).*/\1/p;
	s/^  -([a-zA-Z]), (--[a-z][a-z-]+).*/\1 \2/p' >"$W/pairs.txt"
[ "$(wc -l <"$W/pairs.txt")" -gt 20 ] || fail "--help's options not read: $(cat "$W/pairs.txt")"
while read -r a b; do
	long=${b:-$a} short=
	[ -n "$b" ] && short=-$a
	grep -qE -- "\`$long[ \`]|, $long" "$W/readme.txt" ||
		{ [ -n "$short" ] && grep -qE -- "\`$short[ \`]" "$W/readme.txt"; } ||
		fail "the README's options do not list $long"
done <"$W/pairs.txt"
for opt in $(grep -oE -- '--[a-z][a-z-]+' "$W/readme.txt" | sort -u); do
	echo "$help_opts" | grep -qxF -- "$opt" || fail "the README lists $opt, --help does not"
done
echo "ok: the README's options are --help's"

# every relative link of the Markdown documents names a file that exists
for md in "$ROOT"/README.md "$ROOT"/BENCHMARKS.md "$ROOT"/docs/*.md; do
	for link in $(grep -oE '\]\([^)#:]+(#[^)]*)?\)' "$md" | sed 's/^](//; s/)$//; s/#.*//'); do
		[ -e "$(dirname "$md")/$link" ] || fail "${md#"$ROOT"/} links to $link, which does not exist"
	done
done
echo "ok: every relative link of README.md, BENCHMARKS.md and docs/*.md resolves"

make -s -C "$ROOT" install DESTDIR="$W/root" PREFIX=/usr >"$W/install.log" 2>&1 ||
	fail "make install: $(cat "$W/install.log")"
[ -x "$W/root/usr/sbin/tokentrace" ] || fail "no $W/root/usr/sbin/tokentrace"
[ -f "$W/root/usr/share/man/man8/tokentrace.8" ] || fail "no man page installed"
"$W/root/usr/sbin/tokentrace" --version | grep -qE '^tokentrace [0-9]+\.[0-9]+\.[0-9]+$' ||
	fail "installed binary --version"
[ -z "$(find "$W/root" -type f ! -path '*/usr/sbin/tokentrace' ! -path '*/usr/share/man/man8/tokentrace.8')" ] ||
	fail "make install wrote more: $(find "$W/root" -type f)"
echo "ok: make install DESTDIR=... PREFIX=/usr"
