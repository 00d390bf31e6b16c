# --metrics scraped by a real Prometheus (Debian's prometheus, on a loopback port with a
# generated config) while tokenload streams: Prometheus's HTTP API says the TTFT histogram
# counted every successful request the client saw, the errors only in requests_total; the
# exposition passes promtool; labels stay bounded when clients send many model names; the
# default bind is loopback; a port in use is a one-line error.
. "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || die "prometheus is not installed (tools/install-deps.sh)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# prom_query EXPR: the value of a one-sample instant query, or "none"
prom_query() {
	curl -sf --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
		python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'
}
# wait_query EXPR VALUE SECONDS
wait_query() {
	local i v
	for ((i = 0; i < $3 * 5; i++)); do
		v=$(prom_query "$1" 2>/dev/null || echo none)
		[ "$v" = "$2" ] && return 0
		sleep 0.2
	done
	echo "$1 = $v, expected $2"
	return 1
}

start_sim --ttft-ms 5 --itl-ms 2 --tokens 8 --error-every 7 --error-status 503
start_tt --metrics 0
MPORT=$(sed -n 's|^tokentrace: metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "$WORK/tt.err")
[ -n "$MPORT" ] || die "no 'metrics on http://127.0.0.1:PORT/metrics' line: $(cat "$WORK/tt.err")"
echo "ok: --metrics 0 listens on loopback, port $MPORT"

PROM_PORT=$(free_port)
cat >"$WORK/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: tokentrace
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
YML
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom-data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$WORK/prom.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null || die "prometheus did not start: $(tail -n 5 "$WORK/prom.log")"
wait_query 'up{job="tokentrace"}' 1 15 || die "Prometheus cannot scrape tokentrace"
echo "ok: Prometheus $(prometheus --version 2>&1 | head -n 1 | awk '{print $3}') scrapes tokentrace"

run_load --requests 40 --concurrency 4 --max-tokens 8
ok=$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["status"]==200))' "$WORK/load.jsonl")
errs=$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["status"]==503))' "$WORK/load.jsonl")
[ "$ok" -gt 0 ] && [ "$errs" -gt 0 ] || die "expected successes and 503s from tokensim: $ok, $errs"
wait_query 'sum(gen_ai_server_time_to_first_token_seconds_count)' "$ok" 20 ||
	die "TTFT count in Prometheus is not the $ok successful requests"
echo "ok: TTFT histogram count in Prometheus = $ok, the successful requests tokenload saw"
[ "$(prom_query 'sum(tokentrace_requests_total{status="503"})')" = "$errs" ] || die "503s not counted"
[ "$(prom_query 'sum(tokentrace_requests_total)')" = 40 ] || die "requests_total is not 40"
[ "$(prom_query 'sum(tokentrace_inter_token_latency_seconds_count)')" = $((ok * 7)) ] ||
	die "ITL count is not $((ok * 7))"
[ "$(prom_query 'sum(gen_ai_server_request_duration_seconds_count)')" = "$ok" ] || die "duration count"
[ "$(prom_query 'sum(tokentrace_events_lost_total)')" = 0 ] || die "events lost"
# every TTFT is well under a second here: the 1 s bucket holds them all, the 1 ms one none
[ "$(prom_query 'sum(gen_ai_server_time_to_first_token_seconds_bucket{le="1"})')" = "$ok" ] || die "le=1 bucket"
[ "$(prom_query 'sum(gen_ai_server_time_to_first_token_seconds_bucket{le="0.001"})')" = 0 ] || die "le=0.001 bucket"
p50=$(prom_query 'histogram_quantile(0.5, sum by (le) (gen_ai_server_time_to_first_token_seconds_bucket))')
echo "ok: errors apart, ITL/duration counts agree; measured: TTFT p50 from Prometheus ${p50}s"

# the text exposition, as promtool sees it
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$WORK/metrics.txt" || die "GET /metrics failed"
promtool check metrics <"$WORK/metrics.txt" || die "promtool check metrics failed"
curl -sf -H 'Accept: application/openmetrics-text; version=1.0.0' "http://127.0.0.1:$MPORT/metrics" >"$WORK/metrics.om"
tail -n 1 "$WORK/metrics.om" | grep -qx '# EOF' || die "OpenMetrics without # EOF"
grep -q '^# TYPE tokentrace_requests counter$' "$WORK/metrics.om" || die "OpenMetrics counter family name"
echo "ok: promtool check metrics passes; OpenMetrics on request"

# bounded labels: 70 new model names, 63 fit beside the first one, 7 go to "other"
for i in $(seq 70); do
	"$LOAD" --port "$SIM_PORT" --requests 1 --max-tokens 2 --model "m-$i" --out /dev/null 2>/dev/null || true
done
wait_query 'sum(tokentrace_label_overflow_total)' 7 20 || die "label overflow not counted"
[ "$(prom_query 'count(count by (model) (tokentrace_requests_total))')" = 65 ] ||
	die "not 64 model series + other"
[ "$(prom_query 'sum(tokentrace_requests_total{model="other"})')" = 7 ] || die "other series"
echo "ok: 70 model names -> 64 series + model=\"other\" (7 requests), overflow counted"

# a port in use: one line, exit 1
rc=0
"$TT" -p "$SIM_PID" --metrics "127.0.0.1:$PROM_PORT" >"$WORK/busy.out" 2>"$WORK/busy.err" || rc=$?
[ $rc -eq 1 ] || die "--metrics on a busy port exited $rc"
grep -q "cannot listen: Address already in use" "$WORK/busy.err" || die "busy port: $(cat "$WORK/busy.err")"
[ "$(wc -l <"$WORK/busy.err")" -eq 1 ] || die "busy port: more than one line: $(cat "$WORK/busy.err")"
echo "ok: busy port -> $(cat "$WORK/busy.err")"
stop_tt
