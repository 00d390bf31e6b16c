#!/bin/bash
# nginx (Debian's package) as a streaming reverse proxy on a loopback port, with its own
# prefix in a temporary directory, in the foreground.
#
#   start.sh --upstream 127.0.0.1:PORT|unix:/PATH [--port N] [--dir DIR] [--buffering on]
#            [--directive 'nginx directive;'] [--tls CERT KEY]  (TLS on the listening port)
#            [--http2]  (HTTP/2 on the listening port: h2 by ALPN with --tls, else h2c with
#                        prior knowledge; nginx 1.22's "listen ... http2")
#
# --port 0 (the default) picks a free port. Prints "listening on 127.0.0.1:PORT" once nginx
# has its listening socket (its pid file exists), then waits for nginx; SIGTERM/SIGINT stop
# it. The prefix (config, logs, temp files) is DIR, or a new temporary directory removed on
# exit.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
upstream=
port=0
buffering=off
tls_cert=
tls_key=
http2=
extra=
dir=
while [ $# -gt 0 ]; do
	case $1 in
	--upstream) upstream=$2; shift 2 ;;
	--port) port=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	--buffering) buffering=$2; shift 2 ;;
	--tls) tls_cert=$2; tls_key=$3; shift 3 ;;
	--http2) http2=http2; shift ;;
	--directive) extra="$extra $2"; shift 2 ;;
	*) echo "start.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[ -n "$upstream" ] || { echo "start.sh: --upstream 127.0.0.1:PORT or unix:/PATH" >&2; exit 2; }
case $upstream in
127.0.0.1:* | unix:/*) ;;
*) echo "start.sh: --upstream must be on loopback or a unix socket" >&2; exit 2 ;;
esac
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "start.sh: no nginx (apt-get install nginx)" >&2; exit 1; }
own_dir=
if [ -z "$dir" ]; then
	dir=$(mktemp -d /tmp/tt-nginx.XXXXXX)
	own_dir=1
fi
mkdir -p "$dir"
pid=
stop() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ -n "$own_dir" ] && rm -rf "$dir"
	exit 0
}
trap stop TERM INT

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# As root the workers would run as nobody, who may not enter a test's private directory or
# connect to a root-owned unix socket: keep them root.
user=
[ "$(id -u)" -eq 0 ] && user="user root;"

for attempt in 1 2 3; do
	p=$port
	[ "$p" -eq 0 ] && p=$(free_port)
	sed -e "s|@DIR@|$dir|g" -e "s|@PORT@|$p|g" -e "s|@UPSTREAM@|$upstream|g" \
		-e "s|@USER@|$user|g" -e "s|@BUFFERING@|$buffering|g" -e "s|@EXTRA@|$extra|g" -e "s|@SSL@|${tls_cert:+ssl} $http2|g" \
		-e "s|@SSLCONF@|${tls_cert:+ssl_certificate $tls_cert; ssl_certificate_key $tls_key;}|g" "$HERE/nginx.conf.in" \
		>"$dir/nginx.conf"
	rm -f "$dir/nginx.pid"
	"$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
	pid=$!
	for _ in $(seq 100); do
		[ -s "$dir/nginx.pid" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if [ -s "$dir/nginx.pid" ] && kill -0 "$pid" 2>/dev/null; then
		echo "listening on 127.0.0.1:$p"
		wait "$pid" || true
		pid=
		stop
	fi
	wait "$pid" 2>/dev/null || true
	pid=
	# a port taken between free_port and nginx's bind: pick another
	[ "$port" -eq 0 ] || break
done
echo "start.sh: nginx did not start: $(tail -n 3 "$dir/error.log" 2>/dev/null)" >&2
[ -n "$own_dir" ] && rm -rf "$dir"
exit 1
