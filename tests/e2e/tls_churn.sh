# OpenSSL's probes under process churn (issue 32): hundreds of short-lived Python processes,
# each making one streaming HTTPS request through nginx (TLS) to tokensim, come and go under
# --comm while one traced process stays. Probes are per library file for every process that
# uses it, so:
# - tokentrace's BPF links and fds come back to exactly what the live targets need: the
#   staying process's libssl probed once (2 links per OpenSSL function in the file, counted
#   from its symbols), and once it has gone too, no TLS link at all and none of its fds;
# - every churner's request and the staying process's requests, before and after the churn,
#   are traced exactly (tls, chunks as the client read them, complete);
# - tokentrace exits (0, with its final summary).
# The cost of an SSL_write_ex in the staying process (traced) and in one that is not, and the
# time tokentrace takes to exit, are reported as measured: lines (BENCHMARKS.md).
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3	# Debian's, its ssl on the system's libssl.so.3
HELPER=$ROOT/tests/e2e/tls_churn.py
BPFQ="python3 $ROOT/tests/e2e/bpfmaps.py"
CHURN=${CHURN:-300}
TLS_PROGS=tls_write_enter,tls_write_ex_enter,tls_read_enter,tls_read_ex_enter,tls_handshake_enter,tls_exit_prog

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>"$WORK/openssl.err" ||
	die "openssl req: $(cat "$WORK/openssl.err")"
start_sim --ttft-ms 5 --itl-ms 2 --tokens 8
"$ROOT/tests/stacks/nginx/start.sh" --upstream "127.0.0.1:$SIM_PORT" --dir "$WORK/nginx" \
	--tls "$WORK/cert.pem" "$WORK/key.pem" >"$WORK/nginx.out" 2>"$WORK/nginx.err" &
PIDS+=($!)
wait_for "$WORK/nginx.out" '^listening on ' 15 || die "nginx did not start: $(cat "$WORK/nginx.err")"
NGX_PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/nginx.out")
$PY "$HELPER" sink --cert "$WORK/cert.pem" --key "$WORK/key.pem" --port-file "$WORK/sink.port" &
PIDS+=($!)
for _ in $(seq 100); do [ -f "$WORK/sink.port" ] && break; sleep 0.1; done
SINK_PORT=$(cat "$WORK/sink.port") || die "the TLS sink did not start"

# the traced name: a link to the interpreter (comm is the name exec was given)
mkdir -p "$WORK/bin" "$WORK/churn"
ln -s "$(readlink -f $PY)" "$WORK/bin/ttchurn"
LIBSSL=$(ldd "$($PY -c 'import _ssl; print(_ssl.__file__)')" | awk '/libssl.so/ { print $3 }')
NFUNC=$(nm -D --defined-only "$LIBSSL" | grep -cE ' T SSL_(write|write_ex|read|read_ex|do_handshake)(@|$)' || true)
[ "$NFUNC" -ge 2 ] || die "$LIBSSL: $NFUNC of the OpenSSL functions tokentrace probes"
TLS_LINKS=$((2 * NFUNC))

# steady NAME EXE: a process that stays, commands on $WORK/NAME.ctl (fd 3 or 4 here)
steady() {
	mkfifo "$WORK/$1.ctl"
	"$2" "$HELPER" steady --sink-port "$SINK_PORT" --ngx-port "$NGX_PORT" --ca "$WORK/cert.pem" \
		<"$WORK/$1.ctl" >"$WORK/$1.out" 2>"$WORK/$1.err" &
	PIDS+=($!)
}
steady stay "$WORK/bin/ttchurn"
STAY=${PIDS[-1]}
exec 3>"$WORK/stay.ctl"
steady other $PY	# not traced: the cost of the probes to processes that share the file
exec 4>"$WORK/other.ctl"
wait_for "$WORK/stay.out" '^ready' 10 || die "the staying process: $(cat "$WORK/stay.err")"
wait_for "$WORK/other.out" '^ready' 10 || die "the untraced process: $(cat "$WORK/other.err")"

# ask FD NAME CMD...: one command, its one-line answer (the Nth of its kind) in $REPLY
ask() {
	local fd=$1 name=$2 n
	shift 2
	n=$(grep -c "^$1 " "$WORK/$name.out" || true)
	echo "$*" >&"$fd"
	for _ in $(seq 600); do
		[ "$(grep -c "^$1 " "$WORK/$name.out" || true)" -gt "$n" ] && break
		sleep 0.1
	done
	REPLY=$(grep "^$1 " "$WORK/$name.out" | tail -n 1)
	[ "$(grep -c "^$1 " "$WORK/$name.out")" -gt "$n" ] || die "$name: no answer to $*: $(cat "$WORK/$name.err")"
}
cost_us() {	# FD NAME: the median SSL write, in us
	ask "$1" "$2" cost 3000
	awk '{ printf "%.1f", $2 / 1000 }' <<<"$REPLY"
}
STAY_BASE=$(cost_us 3 stay)
OTHER_BASE=$(cost_us 4 other)

"$TT" --comm ttchurn --json >"$WORK/tt.jsonl" 2>"$WORK/tt.err" &
TT_PID=$!
PIDS+=("$TT_PID")
wait_for "$WORK/tt.jsonl" '"type":"ready"' 30 || die "tokentrace not ready: $(cat "$WORK/tt.err")"

# until_held WHAT WANT CMD...: CMD's output becomes WANT (the lazy hooks' late exits linger
# 5 s after they go off, a file's TLS probes 2 s after its last user): else fail
until_held() {
	local what=$1 want=$2 got
	shift 2
	for _ in $(seq 150); do
		got=$("$@")
		[ "$got" = "$want" ] && return 0
		sleep 0.2
	done
	die "$what: $got, $want expected"
}
until_held "TLS links with the staying process" "$TLS_LINKS" $BPFQ "$TT_PID" links "$TLS_PROGS"
sleep 6	# past the start: a lazy attach's late exits linger 5 s after the hooks go off
FDS0=$($BPFQ "$TT_PID" fds)
STAY_TRACED=$(cost_us 3 stay)
OTHER_TRACED=$(cost_us 4 other)
ask 3 stay stream "$WORK/stay-before.jsonl" 4 8

t0=$(date +%s%N)
$PY "$HELPER" spawn --exe "$WORK/bin/ttchurn" --n "$CHURN" --par 4 -- "$HELPER" once \
	--port "$NGX_PORT" --ca "$WORK/cert.pem" --tokens 4 --out-dir "$WORK/churn" \
	>"$WORK/spawn.out" 2>"$WORK/spawn.err" || die "churn: $(cat "$WORK/spawn.out" "$WORK/spawn.err")"
t1=$(date +%s%N)
[ "$(ls "$WORK/churn" | wc -l)" = "$CHURN" ] || die "churn: $(ls "$WORK/churn" | wc -l) of $CHURN logged"
until_held "churners seen exiting" "$CHURN" \
	bash -c "grep -c '(ttchurn) exited\$' '$WORK/tt.err' || true"
until_held "TLS links after $CHURN churners" "$TLS_LINKS" $BPFQ "$TT_PID" links "$TLS_PROGS"
until_held "tokentrace's fds after $CHURN churners" "$FDS0" $BPFQ "$TT_PID" fds
STAY_AFTER=$(cost_us 3 stay)
OTHER_AFTER=$(cost_us 4 other)
ask 3 stay stream "$WORK/stay-after.jsonl" 4 8

# the last target goes: its file's probes and its pidfd with it
echo quit >&3
wait "$STAY" || die "the staying process failed: $(cat "$WORK/stay.err")"
until_held "TLS links with no target left" 0 $BPFQ "$TT_PID" links "$TLS_PROGS"
FDS_NONE=$($PY - "$FDS0" "$TLS_LINKS" <<'PY'
import sys
k = dict(f.split("=") for f in sys.argv[1].split())
n = int(sys.argv[2])
k["bpf_link"] = str(int(k["bpf_link"]) - n)	# a link and its perf event per probe
k["perf_event"] = str(int(k["perf_event"]) - n)
k["pidfd"] = str(int(k.get("pidfd", "0")) - 1)	# the staying process's, found at start
print(" ".join(f"{a}={b}" for a, b in sorted(k.items()) if b != "0"))
PY
)
until_held "tokentrace's fds with no target left" "$FDS_NONE" $BPFQ "$TT_PID" fds

t2=$(date +%s%N)
kill -INT "$TT_PID"
rc=0
wait "$TT_PID" || rc=$?
t3=$(date +%s%N)
[ $rc -eq 0 ] || die "tokentrace exited $rc: $(tail -n 5 "$WORK/tt.err")"
grep -q '"type":"summary","final":true' "$WORK/tt.jsonl" || die "no final summary"

echo "measured: $CHURN TLS churners (4 at a time) in $(( (t1 - t0) / 1000000 )) ms"
echo "measured: SSL_write_ex of 64 B, median: traced process ${STAY_BASE} us before tokentrace," \
	"${STAY_TRACED} us traced, ${STAY_AFTER} us after $CHURN churners;" \
	"untraced process ${OTHER_BASE} us, ${OTHER_TRACED} us with tokentrace's probes on its libssl," \
	"${OTHER_AFTER} us after the churn"
echo "measured: tokentrace's exit (SIGINT to exited) after the churn: $(( (t3 - t2) / 1000000 )) ms"

$PY - "$WORK" "$CHURN" <<'PY'
import json, os, sys
w, churn = sys.argv[1], int(sys.argv[2])
rows = [json.loads(l) for l in open(f"{w}/tt.jsonl") if l.strip()]
got = {}
for r in rows:
    if r["type"] == "request":
        got.setdefault(r["request_id"], []).append(r)
truth = {t["request_id"]: t for t in map(json.loads, open(f"{w}/truth.jsonl")) if "request_id" in t}
clients = [json.loads(open(f"{w}/churn/{f}").read()) for f in os.listdir(f"{w}/churn")]
for name in ("stay-before", "stay-after"):
    clients += [json.loads(l) for l in open(f"{w}/{name}.jsonl")]
errs = []
for c in clients:
    rid = c["request_id"]
    t, rs = truth.get(rid), got.get(rid, [])
    if not t or c["error"] or not c["final"] or c["chunks"] != t["chunks"]:
        errs.append(f"client {rid}: {c['error']} final {c['final']} chunks {c['chunks']}, truth {t and t['chunks']}")
        continue
    if len(rs) != 1:
        errs.append(f"{rid}: reported {len(rs)} times")
        continue
    r = rs[0]
    if r["direction"] != "client" or not r["tls"] or r["status"] != 200 or \
       r["chunks"] != c["chunks"] or not r["complete"] or r["aborted"] or r["truncated"]:
        errs.append(f"{rid}: direction {r['direction']} tls {r['tls']} status {r['status']} "
                    f"chunks {r['chunks']} (read {c['chunks']}) complete {r['complete']} "
                    f"aborted {r['aborted']}")
extra = set(got) - {c["request_id"] for c in clients}
if extra:
    errs.append(f"requests no client made: {sorted(extra)[:5]}")
s = [r for r in rows if r["type"] == "summary" and r["final"]][0]
if sum(s["lost"].values()) or s["parse_errors"]:
    errs.append(f"lost {s['lost']} parse errors {s['parse_errors']}")
if len(clients) != churn + 8:
    errs.append(f"{len(clients)} client logs, {churn + 8} expected")
for e in errs[:20]:
    print("FAIL:", e)
print(f"{len(clients)} TLS requests of {churn + 1} processes, each traced once, exactly")
sys.exit(1 if errs else 0)
PY
