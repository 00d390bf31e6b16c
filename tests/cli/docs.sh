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

make -s -C "$ROOT" install DESTDIR="$W/root" PREFIX=/usr >"$W/install.log" 2>&1 ||
	fail "make install: $(cat "$W/install.log")"
[ -x "$W/root/usr/sbin/tokentrace" ] || fail "no $W/root/usr/sbin/tokentrace"
[ -f "$W/root/usr/share/man/man8/tokentrace.8" ] || fail "no man page installed"
"$W/root/usr/sbin/tokentrace" --version | grep -qE '^tokentrace [0-9]+\.[0-9]+\.[0-9]+$' ||
	fail "installed binary --version"
[ -z "$(find "$W/root" -type f ! -path '*/usr/sbin/tokentrace' ! -path '*/usr/share/man/man8/tokentrace.8')" ] ||
	fail "make install wrote more: $(find "$W/root" -type f)"
echo "ok: make install DESTDIR=... PREFIX=/usr"
