# TLS, read from OpenSSL's calls (issue 14). nginx (Debian's, linked to libssl.so.3)
# terminates TLS with a certificate this test makes, in front of tokensim; the clients are a
# Python one (the standard library's http.client and ssl, as SDKs use them) and a Node one
# (fetch: Node's own statically linked OpenSSL, a memory BIO).
# - nginx traced (-p its master; the worker is followed): every downstream TLS stream is
#   reported once, "tls":true, exact chunk counts, complete, paired with its plaintext
#   upstream call; per token tokensim's send <= nginx's send (the ciphertext's socket send)
#   <= the client's read.
# - each client traced: outbound records ("direction":"client","tls":true) with the Host
#   called, the server's address (Node's memory BIO hides the socket: "tls:memory-bio"),
#   status and model; per token tokensim's send <= tokentrace's time <= the client's own
#   log of it; in Prometheus the OpenTelemetry GenAI client metrics count them by the Host.
# - noise at the TLS port (random bytes, half a ClientHello, plaintext HTTP, binary inside a
#   finished handshake): nothing crashes, the streams alongside are all still right, and each
#   is counted where the summary says.
# - --no-tls: the TLS connections are counted as unparsed, the plaintext upstream still seen;
#   --port of another port: no TLS stream of nginx's port reported.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3	# Debian's, with its ssl on the system's libssl.so.3
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>"$WORK/openssl.err" ||
	die "openssl req: $(cat "$WORK/openssl.err")"
start_sim --ttft-ms 20 --itl-ms 5 --jitter-ms 2 --tokens 16
"$ROOT/tests/stacks/nginx/start.sh" --upstream "127.0.0.1:$SIM_PORT" --dir "$WORK/nginx" \
	--tls "$WORK/cert.pem" "$WORK/key.pem" >"$WORK/nginx.out" 2>"$WORK/nginx.err" &
PIDS+=($!)
wait_for "$WORK/nginx.out" '^listening on ' 15 || die "nginx did not start: $(cat "$WORK/nginx.err")"
NGX_PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/nginx.out")
NGX_MASTER=$(cat "$WORK/nginx/nginx.pid")

# tracer NAME PID [flags...]: tokentrace -p PID --json into $WORK/NAME.jsonl, once ready
tracer() {
	local name=$1 pid=$2
	shift 2
	"$TT" -p "$pid" --json "$@" >"$WORK/$name.jsonl" 2>"$WORK/$name.err" &
	TRACER=$!
	PIDS+=("$TRACER")
	wait_for "$WORK/$name.jsonl" '"type":"ready"' 30 || die "$name: not ready: $(cat "$WORK/$name.err")"
}
untrace() {	# PID NAME: SIGINT, exit 0, a final summary
	sleep 0.3
	kill -INT "$1"
	wait "$1" || die "$2: tokentrace exited $?: $(cat "$WORK/$2.err")"
	grep -q '"type":"summary","final":true' "$WORK/$2.jsonl" || die "$2: no final summary"
}

tracer nginx "$NGX_MASTER"
NGX_TT=$TRACER
grep -q 'tls=[1-9]' "$WORK/nginx.err" || die "nginx: OpenSSL not probed: $(cat "$WORK/nginx.err")"
$PY "$ROOT/tests/e2e/tls_noise.py" "$NGX_PORT" "$WORK/cert.pem" >"$WORK/noise.out" ||
	die "noise: $(cat "$WORK/noise.out")"

# client KIND: started first, traced, then let go (a client already running when attached)
client() {
	local kind=$1 cmd
	if [ "$kind" = py ]; then
		cmd=($PY "$ROOT/tests/stacks/python/sdk_client.py" --ca "$WORK/cert.pem" --threads 2)
	else
		cmd=(env NODE_EXTRA_CA_CERTS="$WORK/cert.pem" node "$ROOT/tests/stacks/node/fetch_client.js"
		     --concurrency 2)
	fi
	"${cmd[@]}" --port "$NGX_PORT" --requests 8 --tokens 16 --id-prefix "$kind-" \
		--out "$WORK/$kind.load" --wait-file "$WORK/$kind.go" --stay-file "$WORK/$kind.stay" \
		2>"$WORK/$kind.load.err" &
	local cpid=$!
	PIDS+=("$cpid")
	tracer "$kind" "$cpid" --metrics 0
	touch "$WORK/$kind.go"
	# done: 8 lines logged; the client stays up while its metrics are scraped
	for _ in $(seq 300); do
		[ "$(wc -l <"$WORK/$kind.load" 2>/dev/null)" = 8 ] && break
		sleep 0.1
	done
	sleep 0.3	# the last records reach the endpoint
	local mport
	mport=$(sed -n 's|^tokentrace: metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "$WORK/$kind.err")
	curl -sf "http://127.0.0.1:$mport/metrics" >"$WORK/$kind.prom" || die "$kind: scrape failed"
	touch "$WORK/$kind.stay"
	wait "$cpid" || die "$kind client failed: $(cat "$WORK/$kind.load.err")"
	untrace "$TRACER" "$kind"
}
client py
client node
untrace "$NGX_TT" nginx

# An OpenSSL loaded after attach, and not the system's file (a copy, as a venv's or an app's
# own): a client that imports ssl only when it needs it is traced, tokentrace rereads the
# traced processes' maps every 2 s and probes the copy once mapped
mkdir -p "$WORK/lib"
cp "$(/usr/bin/python3 -c 'import _ssl; print(_ssl.__file__)' | xargs ldd | awk '/libssl.so/ { print $3 }')" "$WORK/lib/"
env LD_LIBRARY_PATH="$WORK/lib" $PY -c '
import os, runpy, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
import ssl	# the app needs TLS now: libssl is loaded here, after the tracer attached
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
sys.argv = sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
' "$WORK/lazy.go1" "$WORK/lazy.go2" "$ROOT/tests/stacks/python/sdk_client.py" --ca "$WORK/cert.pem" \
	--port "$NGX_PORT" --requests 4 --threads 1 --tokens 16 --id-prefix lazy- \
	--out "$WORK/lazy.load" 2>"$WORK/lazy.load.err" &
LAZY=$!
PIDS+=("$LAZY")
tracer lazy "$LAZY"
touch "$WORK/lazy.go1"
for _ in $(seq 100); do
	grep -q "$WORK/lib/libssl" "/proc/$LAZY/maps" 2>/dev/null && break
	sleep 0.05
done
grep -q "$WORK/lib/libssl" "/proc/$LAZY/maps" || die "the lazy client did not load its libssl copy"
sleep 3	# past a rescan of the maps (every 2 s)
touch "$WORK/lazy.go2"
wait "$LAZY" || die "the lazy client failed: $(cat "$WORK/lazy.load.err")"
untrace "$TRACER" lazy

# --no-tls: nginx's TLS connections are left unparsed, its plaintext upstream calls are not
tracer notls "$NGX_MASTER" --no-tls
$PY "$ROOT/tests/stacks/python/sdk_client.py" --ca "$WORK/cert.pem" --port "$NGX_PORT" \
	--requests 4 --tokens 16 --id-prefix notls- --out "$WORK/notls.load" ||
	die "--no-tls client failed"
untrace "$TRACER" notls
# --port of another port: nginx's TLS streams are left out, their plaintext too
tracer otherport "$NGX_MASTER" --port "$SIM_PORT"
$PY "$ROOT/tests/stacks/python/sdk_client.py" --ca "$WORK/cert.pem" --port "$NGX_PORT" \
	--requests 2 --tokens 16 --id-prefix other- --out "$WORK/other.load" ||
	die "--port client failed"
untrace "$TRACER" otherport

$PY - "$WORK" "$NGX_PORT" "$SIM_PORT" <<'PY'
import json, sys
w, ngx_port = sys.argv[1], sys.argv[2]


def rows(name):
    return [json.loads(l) for l in open(f"{w}/{name}") if l.strip()]


def reqs(name):
    return [r for r in rows(name) if r["type"] == "request"]


def final(name):
    return [r for r in rows(name) if r["type"] == "summary" and r["final"]][0]


def times(r):
    t, out = r["t_first_token_ns"], []
    if t is None:
        return out
    out.append(t)
    for g in r["itl_ns"]:
        t += g
        out.append(t)
    return out


truth = {t["request_id"]: t for t in rows("truth.jsonl")}
load = {c["request_id"]: c for k in ("py", "node") for c in rows(f"{k}.load")}
errs = []


def causal(what, rid, tt, lo, hi):
    """tokensim's send <= tokentrace's time <= the client's read, token by token."""
    if len(tt) != len(lo):
        errs.append(f"{what} {rid}: {len(tt)} token times, truth {len(lo)}")
        return []
    for i, (a, t) in enumerate(zip(lo, tt)):
        if t < a:
            errs.append(f"{what} {rid}: token {i} at {(a - t) / 1e3:.1f} us before tokensim sent it")
            return []
        if hi and t > hi[i]:
            errs.append(f"{what} {rid}: token {i} {(t - hi[i]) / 1e3:.1f} us after the client read it")
            return []
    return [h - t for h, t in zip(hi, tt)] if hi else []


for rid, c in load.items():
    t = truth.get(rid)
    if not t or c["error"] or not c["final"] or c["chunks"] != t["chunks"]:
        errs.append(f"client {rid}: {c.get('error')} final {c['final']}, {c['chunks']} chunks, "
                    f"truth {t and t['chunks']}")

# nginx: the downstream TLS streams and their upstream calls
down = [r for r in reqs("nginx.jsonl") if r["direction"] == "server"]
up = {r["request_id"]: r for r in reqs("nginx.jsonl") if r["direction"] == "client"}
seen = {}
lag = []
for r in down:
    rid = r["request_id"]
    if rid not in load:
        # the noise's plaintext request, answered 400 by nginx on the plain socket
        if not (r["status"] == 400 and not r["tls"]):
            errs.append(f"nginx: a request no client made: {rid} status {r['status']} tls {r['tls']}")
        seen["plain-400"] = seen.get("plain-400", 0) + 1
        continue
    seen[rid] = seen.get(rid, 0) + 1
    t = truth[rid]
    if not r["tls"] or r["status"] != 200 or r["chunks"] != t["chunks"] or not r["complete"] \
       or r["aborted"] or r["truncated"]:
        errs.append(f"nginx {rid}: tls {r['tls']} status {r['status']} chunks {r['chunks']} "
                    f"(truth {t['chunks']}) complete {r['complete']} aborted {r['aborted']}")
        continue
    u = r["upstream"]
    if not u or u["paired_by"] != "stream_id" or \
       r["ttft_ns"] != u["request_delay_ns"] + u["ttft_ns"] + u["first_token_delay_ns"]:
        errs.append(f"nginx {rid}: upstream {u}")
    lag += causal("nginx downstream", rid, times(r), t["t_token_ns"], load[rid]["t_chunk_ns"])
    ur = up.get(rid)
    if not ur or ur["tls"] or ur["chunks"] != t["chunks"] or not ur["complete"]:
        errs.append(f"nginx {rid}: its upstream call {ur and (ur['tls'], ur['chunks'], ur['complete'])}")
    else:
        causal("nginx upstream", rid, times(ur), t["t_token_ns"], None)
for rid in load:
    if seen.get(rid) != 1:
        errs.append(f"nginx: {rid} reported {seen.get(rid, 0)} times")
if seen.get("plain-400") != 1:
    errs.append(f"nginx: the plaintext request to the TLS port reported {seen.get('plain-400', 0)} times")
s = final("nginx.jsonl")
cn = s["conns"]
# garbage and the half ClientHello: never HTTP; the binary inside TLS got nginx's 400 over
# TLS, a response to a request that was not HTTP
if cn["unparsed"] != 2 or cn["unmatched_responses"] != 1 or cn["tls"] < 5:
    errs.append(f"nginx: connections {cn}: 2 unparsed (garbage, half hello), 1 unmatched "
                f"response (binary in TLS), >= 5 TLS (4 clients', the binary one) expected")
if sum(s["lost"].values()) or s["parse_errors"]:
    errs.append(f"nginx: lost {s['lost']} parse errors {s['parse_errors']}")
if lag:
    lag.sort()
    print(f"measured: nginx: client read - tokentrace's TLS send over {len(lag)} tokens: "
          f"p50 {lag[len(lag) // 2] / 1e3:.1f} us, max {lag[-1] / 1e3:.1f} us")

# each client traced: its outbound TLS streams
for kind in ("py", "node"):
    got = reqs(f"{kind}.jsonl")
    lag = []
    ids = sorted(r["request_id"] for r in got)
    want = sorted(rid for rid in load if rid.startswith(kind + "-"))
    if ids != want:
        errs.append(f"{kind} client traced: requests {ids}, the client made {want}")
    for r in got:
        rid = r["request_id"]
        t = truth.get(rid)
        if not t:
            continue
        if r["direction"] != "client" or not r["tls"] or r["status"] != 200 or \
           r["model"] != "tokensim" or r["host"] != f"127.0.0.1:{ngx_port}" or \
           not (r["conn"].endswith(f"127.0.0.1:{ngx_port}") or
                (kind == "node" and r["conn"] == "tls:memory-bio")) or \
           r["chunks"] != t["chunks"] or not r["complete"] or r["aborted"]:
            errs.append(f"{kind} {rid}: direction {r['direction']} tls {r['tls']} status "
                        f"{r['status']} model {r['model']} host {r['host']} conn {r['conn']} chunks {r['chunks']} "
                        f"complete {r['complete']} aborted {r['aborted']}")
            continue
        lag += causal(f"{kind} client", rid, times(r), t["t_token_ns"], load[rid]["t_chunk_ns"])
    # Prometheus: the OTel GenAI client metrics, one stream each, by the Host called
    prom = open(f"{w}/{kind}.prom").read().splitlines()
    for fam, n in (("time_to_first_chunk", len(want)), ("duration", len(want)),
                   ("time_per_output_chunk", sum(load[i]["chunks"] - 1 for i in want))):
        line = [l for l in prom if l.startswith(f"gen_ai_client_operation_{fam}_seconds_count{{")
                and f'server_address="127.0.0.1:{ngx_port}"' in l]
        if len(line) != 1 or int(line[0].split()[-1]) != n:
            errs.append(f"{kind}: gen_ai_client_operation_{fam}_seconds_count: {line}, {n} expected")
    if any(l.startswith("gen_ai_server_time_to_first_token_seconds_count{") for l in prom):
        errs.append(f"{kind}: the client's calls counted as served")
    if final(f"{kind}.jsonl")["client"]["requests"] != len(want):
        errs.append(f"{kind}: the summary's client requests {final(f'{kind}.jsonl')['client']}")
    if lag:
        lag.sort()
        print(f"measured: {kind} client: its own log - tokentrace over {len(lag)} tokens: "
              f"p50 {lag[len(lag) // 2] / 1e3:.1f} us, max {lag[-1] / 1e3:.1f} us")

# a libssl loaded after attach: every request of the lazy client read from it
got = sorted(r["request_id"] for r in reqs("lazy.jsonl") if r["tls"] and r["direction"] == "client")
if got != [f"lazy-{i}" for i in range(4)]:
    errs.append(f"libssl loaded after attach: TLS requests {got}, 4 made")
for r in reqs("lazy.jsonl"):
    if r["request_id"] in truth and r["chunks"] != truth[r["request_id"]]["chunks"]:
        errs.append(f"lazy {r['request_id']}: chunks {r['chunks']}")

# --no-tls: no TLS stream parsed, the TLS connections counted, the upstream calls all seen
got = reqs("notls.jsonl")
if any(r["tls"] or r["direction"] == "server" for r in got):
    errs.append("--no-tls: a TLS stream was parsed")
if sorted(r["request_id"] for r in got) != [f"notls-{i}" for i in range(4)]:
    errs.append(f"--no-tls: upstream calls {[r['request_id'] for r in got]}")
cn = final("notls.jsonl")["conns"]
if cn["tls"] != 0 or cn["unparsed"] < 2:
    errs.append(f"--no-tls: connections {cn}: the 2 client connections unparsed expected")
# --port SIM_PORT: only tokensim's side of nginx's upstream calls would qualify, and nginx
# only connects to it; its downstream TLS (on NGX_PORT) must not leak as tls:memory-bio
got = [r for r in reqs("otherport.jsonl") if r["direction"] == "server" or r["tls"]]
if got:
    errs.append(f"--port {sys.argv[3]}: TLS streams of another port reported: "
                f"{[(r['request_id'], r['conn']) for r in got]}")
for e in errs[:20]:
    print("FAIL:", e)
sys.exit(1 if errs else 0)
PY
