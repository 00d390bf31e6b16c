# Output files against a hostile local user (issue 12). An unprivileged user (ttsec, made here
# if absent) plants, in a directory everyone may write to, a symlink to a root-only file, a
# dangling symlink, and world-readable files of its own (one hard-linked), at the paths root
# then gives to -w and --perfetto. tokentrace must refuse each with one line and touch nothing,
# or, with --force, write a root-owned 0600 file at the path and nowhere else; what ttsec
# created or holds stays as it was, so nothing of the recording reaches it. (These machines
# have fs.protected_symlinks=0 and protected_regular=0: the kernel does not help.)
. "$(dirname "$0")/lib.sh"

U=ttsec
if ! id -u "$U" >/dev/null 2>&1; then
	useradd -M -r -s /usr/sbin/nologin "$U" || die "cannot create user $U"
fi
UID_=$(id -u "$U")
as_user() { setpriv --reuid="$U" --regid="$U" --clear-groups -- "$@"; }
echo "note: fs.protected_symlinks=$(sysctl -n fs.protected_symlinks) fs.protected_regular=$(sysctl -n fs.protected_regular)"

chmod 711 "$WORK"
PUB=$WORK/pub			# like /tmp: sticky, world-writable
mkdir -m 1777 "$PUB"
VICTIM=$WORK/victim		# root's, unreadable to ttsec
echo "root only" >"$VICTIM"
chmod 600 "$VICTIM"

as_user ln -s "$VICTIM" "$PUB/link.ttr"
as_user ln -s "$VICTIM" "$PUB/link.json"
as_user ln -s "$WORK/made-through-link" "$PUB/dangling.json"
as_user sh -c "umask 022; : >'$PUB/pre.ttr'; : >'$PUB/pre.json'; ln '$PUB/pre.ttr' '$PUB/pre-link.ttr'"
as_user test -r "$PUB/pre.ttr" || die "ttsec cannot read its own file"
as_user test -r "$VICTIM" && die "ttsec can read the victim: the test proves nothing"

# the state of what ttsec and root left there, before and after
snap() { find "$PUB" "$VICTIM" -printf '%p %y %u %m %s %i %l\n' | sort; }

start_sim --ttft-ms 5 --itl-ms 2 --tokens 6

# refuse RC REGEX ARGS...: exit 1, one stderr line matching, nothing else touched
refuse() {
	local re=$1 rc=0 before
	shift
	before=$(snap)
	timeout 60 "$TT" -p "$SIM_PID" -q "$@" 0 >"$WORK/out.txt" 2>"$WORK/refuse.err" || rc=$?
	[ $rc -eq 1 ] || die "'$*' exited $rc: $(cat "$WORK/refuse.err")"
	[ "$(wc -l <"$WORK/refuse.err")" -eq 1 ] || die "'$*': not one line: $(cat "$WORK/refuse.err")"
	grep -qE -- "$re" "$WORK/refuse.err" || die "'$*' said: $(cat "$WORK/refuse.err")"
	[ "$(snap)" = "$before" ] || die "'$*' changed files: $(diff <(echo "$before") <(snap))"
	echo "ok: refused: $(cat "$WORK/refuse.err")"
}
refuse "-w $PUB/link.ttr: is a symbolic link: not followed" -w "$PUB/link.ttr"
refuse "--perfetto $PUB/link.json: is a symbolic link" --perfetto "$PUB/link.json"
refuse "--perfetto $PUB/dangling.json: is a symbolic link" --perfetto "$PUB/dangling.json"
refuse "-w $PUB/pre.ttr: exists and belongs to uid $UID_ \(mode 0644\): not replaced \(remove it, or --force\)" \
	-w "$PUB/pre.ttr"
refuse "--perfetto $PUB/pre.json: exists and belongs to uid $UID_" --perfetto "$PUB/pre.json"
# a refused --perfetto leaves no recording behind either
refuse "--perfetto $PUB/pre.json" -w "$PUB/new.ttr" --perfetto "$PUB/pre.json"
[ -e "$PUB/new.ttr" ] && die "a refused run left $PUB/new.ttr"
[ -e "$WORK/made-through-link" ] && die "the dangling link was followed"
[ "$(cat "$VICTIM")" = "root only" ] || die "the victim changed"

# --force: the planted names are replaced by root's own files; what they pointed to, ttsec's
# other link and anything ttsec holds open see nothing
setpriv --reuid="$U" --regid="$U" --clear-groups -- sh -c "exec 3<'$PUB/pre.ttr'; exec sleep 30" &
HOLDER=$!
PIDS+=("$HOLDER")
before=$(snap | grep -vE "^$PUB/(pre|link)\.(ttr|json) ")
start_tt --force -w "$PUB/pre.ttr" --perfetto "$PUB/link.json" 0
run_load --requests 3 --max-tokens 6
stop_tt
after=$(snap | grep -vE "^$PUB/(pre|link)\.(ttr|json) ")
[ "$after" = "$before" ] || die "--force changed other files: $(diff <(echo "$before") <(echo "$after"))"
for f in "$PUB/pre.ttr" "$PUB/link.json"; do
	[ -f "$f" ] && [ ! -L "$f" ] || die "$f is not a regular file"
	[ "$(stat -c '%U %a' "$f")" = "root 600" ] || die "$f: $(stat -c '%U %a' "$f")"
	as_user cat "$f" >/dev/null 2>&1 && die "ttsec can read $f"
done
[ "$(cat "$VICTIM")" = "root only" ] || die "the victim changed"
[ "$(stat -c '%U %a %s %h' "$PUB/pre-link.ttr")" = "$U 644 0 1" ] ||
	die "ttsec's other link changed: $(stat -c '%U %a %s %h' "$PUB/pre-link.ttr")"
[ "$(stat -L -c %s "/proc/$HOLDER/fd/3")" = 0 ] || die "the file ttsec holds open got data"
kill "$HOLDER" 2>/dev/null || true
# and they hold the run
"$TT" -r "$PUB/pre.ttr" --json >"$WORK/replay.jsonl" 2>"$WORK/replay.err" || die "replay: $(cat "$WORK/replay.err")"
[ "$(grep -c '"type":"request"' "$WORK/replay.jsonl")" = 3 ] || die "the recording lacks the 3 requests"
python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); assert any(x.get("cat")=="request" for x in e)' \
	"$PUB/link.json" || die "the --perfetto file is not a trace"
echo "ok: --force: root-owned 0600 files at the paths; the victim, ttsec's link and open file untouched"

# root's own file, world-readable: replaced without --force, the result 0600
echo old >"$PUB/mine.ttr"
chmod 644 "$PUB/mine.ttr"
start_tt -w "$PUB/mine.ttr" 0
run_load --requests 1 --max-tokens 3
stop_tt
[ "$(stat -c '%U %a' "$PUB/mine.ttr")" = "root 600" ] || die "mine.ttr: $(stat -c '%U %a' "$PUB/mine.ttr")"
echo "ok: the caller's own 0644 file is replaced by a 0600 one"

# a new file in ttsec's reach: created 0600 whatever the umask
(umask 000 && exec "$TT" -p "$SIM_PID" -q -w "$PUB/fresh.ttr" --perfetto "$PUB/fresh.json" 0.2 1) \
	>/dev/null 2>"$WORK/fresh.err" || die "umask 000 run: $(cat "$WORK/fresh.err")"
for f in "$PUB/fresh.ttr" "$PUB/fresh.json"; do
	[ "$(stat -c '%U %a' "$f")" = "root 600" ] || die "$f: $(stat -c '%U %a' "$f") under umask 000"
done
echo "ok: new files are 0600 under umask 000"
