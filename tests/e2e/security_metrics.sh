# --metrics against hostile clients (issue 12): 200 connections that send half a request, or
# nothing, and stay open must not stop a scrape (before, 129 of them blocked scrapes for the
# 30 s connection timeout; now a new connection evicts the oldest). A non-loopback address is
# never bound silently: tokentrace says what it would expose (tested on an address this host
# does not have, so nothing listens beyond loopback).
. "$(dirname "$0")/lib.sh"

start_sim --ttft-ms 5 --itl-ms 2 --tokens 4
start_tt --metrics 0 0
MPORT=$(sed -n 's|^tokentrace: metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "$WORK/tt.err")
[ -n "$MPORT" ] || die "no metrics port: $(cat "$WORK/tt.err")"
grep -q 'warning' "$WORK/tt.err" && die "a warning for a loopback bind: $(cat "$WORK/tt.err")"
run_load --requests 3 --max-tokens 4

# hold 200 half-open connections, scrape three times meanwhile (each bounded at 5 s: the
# server's idle timeout is 10 s, so an answer in time is the eviction's, not the timeout's)
python3 - "$MPORT" >"$WORK/flood.txt" 2>&1 <<'PY' || die "scrape while flooded: $(cat "$WORK/flood.txt")"
import socket, subprocess, sys
port = int(sys.argv[1])
held = []
for i in range(200):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if i % 2:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")	# never the blank line
    held.append(s)
for k in range(3):
    r = subprocess.run(["curl", "-sS", "--max-time", "5", "-o", "/dev/stdout", "-w", "%{http_code}",
                        f"http://127.0.0.1:{port}/metrics"], capture_output=True, text=True)
    assert r.stdout.endswith("200"), (k, r.stdout[-200:], r.stderr)
    assert "tokentrace_requests_total{" in r.stdout, r.stdout[:300]
    print("scrape", k, "ok,", len(r.stdout), "bytes")
# the first connections were closed for the later ones
closed = 0
for s in held[:100]:
    s.settimeout(0.5)
    try:
        closed += s.recv(1) == b""
    except (socket.timeout, ConnectionResetError):
        closed += 1
print("first 100 held connections closed by the server:", closed)
assert closed >= 90, closed
PY
cat "$WORK/flood.txt"
ev=$(curl -sf --max-time 5 "http://127.0.0.1:$MPORT/metrics" | sed -n 's/^tokentrace_metrics_connections_evicted_total //p')
[ -n "$ev" ] && [ "$ev" -ge 168 ] || die "evicted connections counted: '$ev', expected >= 200 - 32"
echo "ok: 200 half-open connections, scrapes still answer; $ev connections evicted"
stop_tt

# beyond loopback: the warning names what is exposed, and comes before any bind
for addr in 192.0.2.1:0 '[2001:db8::1]:0'; do
	rc=0
	timeout 60 "$TT" -p "$SIM_PID" -q --metrics "$addr" 0 >/dev/null 2>"$WORK/pub.err" || rc=$?
	[ $rc -eq 1 ] || die "--metrics $addr exited $rc (this host has no such address)"
	grep -qE "^tokentrace: warning: --metrics .*:0 is reachable from other hosts, with no authentication: .*PIDs and names, the model names and request paths" \
		"$WORK/pub.err" || die "no warning for $addr: $(cat "$WORK/pub.err")"
	grep -q 'cannot listen: Cannot assign requested address' "$WORK/pub.err" ||
		die "$addr: $(cat "$WORK/pub.err")"
	echo "ok: --metrics $addr: $(head -c 120 "$WORK/pub.err")..."
done
