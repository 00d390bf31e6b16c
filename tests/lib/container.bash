# Servers in containers for the e2e tests: source it after tests/e2e/lib.sh.
#
#   ct_rootfs NAME                 the root of tests/lib/rootfs.sh NAME (built if missing)
#   ct_netns NAME                  a network namespace of the test's own, loopback up; sets
#                                  CT_NETNS (its name under /run/netns)
#   ct_net NETNS CMD...            run CMD (from the host's root) in that network namespace
#   ct_start NAME [opts] -- CMD... start CMD in ROOT as a container; sets CT_PID to CMD's
#                                  host PID once its comm is COMM
#       --root ROOT                its root filesystem (ct_rootfs)
#       --via unshare|podman       unshare: own PID and mount namespaces + chroot (the root
#                                  read-only, /proc, /sys, tmpfs /tmp and /dev/shm); podman:
#                                  an image imported from ROOT, run by runc
#       --netns NETNS              in that network namespace (default: the host's, so the
#                                  host's loopback reaches it)
#       --bind SRC:NAME            SRC at /mnt/NAME inside (read-write)
#       --env K=V                  in CMD's environment (else only PATH, HOME, LANG)
#       --comm COMM                wait for this comm (default: CMD's base name; -: none)
#   ct_run ROOT [--bind SRC:NAME] -- CMD...   run CMD to its end in ROOT (unshare+chroot, as
#                                  ct_start does), up to CT_RUN_SECS (120); its status
#   ct_stop NAME                   SIGTERM to CMD; after CT_STOP_SECS (10) SIGKILL to the whole
#                                  container; waits for it; CT_RC is CMD's exit status
#
# CMD is never the container's PID 1: a small sh init is, in the root (as a runtime's init
# would be), forwarding SIGTERM/SIGINT to CMD and exiting with its status, because PID 1 of
# a namespace ignores signals it has no handler for. When PID 1 goes, the kernel kills
# everything else in the PID namespace, and the mounts go with the mount namespace; podman
# containers are removed. So a test, however it ends (its EXIT trap; the runner's timeout
# signals the whole process group), leaves no process, mount, container or netns behind.
# Containers and netns are named tt-e2e-<test's pid>-NAME; ones left by a test that died
# without its trap (SIGKILL) are removed when the next test sources this.
ROOTFS_SH=$ROOT/tests/lib/rootfs.sh
CT_STOP_SECS=${CT_STOP_SECS:-10}
# podman 4.3 on Debian 12 here: crun and the default rlimits fail setrlimit with EPERM
PODMAN_RUN=(podman run --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
declare -A CT_VIA CT_HANDLE CT_INIT CT_HOSTPID
CT_NAMES=()
CT_NETNSES=()
CT_RC=
CT_RUNS=0

# the init, in the root's own sh: CMD a child, signals forwarded, its status returned
CT_INIT_SH='c=
trap '\''[ -n "$c" ] && kill -TERM "$c" 2>/dev/null'\'' TERM INT
"$@" &
c=$!
rc=0
while kill -0 "$c" 2>/dev/null; do wait "$c"; rc=$?; done
exit $rc'

ct_rootfs() {
	local r
	r=$("$ROOTFS_SH" "$1" 2>"$WORK/rootfs-$1.err") ||
		die "rootfs $1: $(tail -n 5 "$WORK/rootfs-$1.err")"
	grep '^rootfs: .* ready in ' "$WORK/rootfs-$1.err" | sed 's/^rootfs:/note: rootfs/' || true
	echo "$r"
}

ct_netns() {
	CT_NETNS=tt-e2e-$$-$1
	ip netns add "$CT_NETNS" || die "ip netns add $CT_NETNS failed"
	CT_NETNSES+=("$CT_NETNS")
	ip -n "$CT_NETNS" link set lo up || die "loopback up in $CT_NETNS failed"
}

ct_net() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# podman image of a root: imported once per root (its path names its content), kept
ct__image() {
	local root=$1 tag
	tag=localhost/tokentrace-rootfs:$(basename "$root")
	if ! timeout 60 podman image exists "$tag"; then
		local t0=$SECONDS
		tar -C "$root" -c . | timeout 300 podman import -q - "$tag" >/dev/null ||
			{ echo "podman import of $root failed" >&2; return 1; }
		echo "note: podman import $(basename "$root"): $((SECONDS - t0))s" >&2
	fi
	echo "$tag"
}

# the only child of pid (the init's CMD), once it exists and is named comm; up to 30 s
ct__child() {
	local init=$1 comm=$2 i kids k
	for ((i = 0; i < 300; i++)); do
		kids=$(cat /proc/"$init"/task/*/children 2>/dev/null || true)
		for k in $kids; do
			if [ "$(cat /proc/"$k"/comm 2>/dev/null)" = "$comm" ]; then
				echo "$k"
				return 0
			fi
		done
		kill -0 "$init" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

ct__start_unshare() {	# NAME ROOT NETNS CMD... (binds and env in the caller's arrays)
	local name=$1 root=$2 ns=$3 pre=()
	shift 3
	[ -n "$ns" ] && pre=(ip netns exec "$ns")
	# PID 1 of the new namespaces: the mounts, then the root's init under chroot
	local setup='set -e
R=$1; shift
mount --bind "$R" "$R"
mount -o remount,bind,ro "$R"
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$R/sys"
mount -t tmpfs -o size=512m,mode=1777 tmpfs "$R/tmp"
mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm"
mount -t tmpfs -o size=1m tmpfs "$R/mnt"
while [ "$1" != -- ]; do
	mkdir "$R/mnt/${1#*:}"
	mount --bind "${1%%:*}" "$R/mnt/${1#*:}"
	shift
done
shift
exec chroot "$R" "$@"'
	"${pre[@]}" unshare --pid --mount --fork --kill-child --propagation private \
		bash -c "$setup" setup "$root" "${CT__BINDS[@]}" -- \
		/usr/bin/env -i "${CT__ENV[@]}" /bin/sh -c "$CT_INIT_SH" init "$@" \
		>"$WORK/ct-$name.out" 2>"$WORK/ct-$name.err" &
	CT_HANDLE[$name]=$!
	# unshare's child is the namespaces' PID 1, the init after its exec
	local i kid=
	for ((i = 0; i < 100; i++)); do
		kid=$(cat /proc/"${CT_HANDLE[$name]}"/task/*/children 2>/dev/null | awk '{print $1; exit}')
		[ -n "$kid" ] && break
		sleep 0.05
	done
	CT_INIT[$name]=$kid
}

ct__start_podman() {	# NAME ROOT NETNS CMD...
	local name=$1 root=$2 ns=$3 image args=() b e
	shift 3
	image=$(ct__image "$root") || exit 1
	if [ -n "$ns" ]; then
		args+=(--network "ns:/run/netns/$ns")
	else
		args+=(--network host)
	fi
	for b in "${CT__BINDS[@]}"; do
		args+=(-v "${b%%:*}:/mnt/${b#*:}")
	done
	for e in "${CT__ENV[@]}"; do
		args+=(-e "$e")
	done
	CT_HANDLE[$name]=tt-e2e-$$-$name
	timeout 60 "${PODMAN_RUN[@]}" -d --name "${CT_HANDLE[$name]}" "${args[@]}" "$image" \
		/bin/sh -c "$CT_INIT_SH" init "$@" >"$WORK/ct-$name.id" 2>"$WORK/ct-$name.err" ||
		die "podman run $name: $(tail -n 3 "$WORK/ct-$name.err")"
	CT_INIT[$name]=$(timeout 60 podman inspect -f '{{.State.Pid}}' "${CT_HANDLE[$name]}")
}

ct_start() {
	local name=$1 root= via=unshare ns= comm=
	shift
	CT__BINDS=()
	CT__ENV=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
		LANG=C.UTF-8)
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		case $1 in
		--root) root=$2 ;;
		--via) via=$2 ;;
		--netns) ns=$2 ;;
		--bind) CT__BINDS+=("$2") ;;
		--env) CT__ENV+=("$2") ;;
		--comm) comm=$2 ;;
		*) die "ct_start: unknown option $1" ;;
		esac
		shift 2
	done
	shift
	[ -d "$root" ] || die "ct_start $name: no root '$root'"
	[ -n "$comm" ] || comm=$(basename "$1" | cut -c1-15)
	CT_NAMES+=("$name")
	CT_VIA[$name]=$via
	case $via in
	unshare) ct__start_unshare "$name" "$root" "$ns" "$@" ;;
	podman) ct__start_podman "$name" "$root" "$ns" "$@" ;;
	*) die "ct_start: --via unshare|podman, not $via" ;;
	esac
	[ -n "${CT_INIT[$name]:-}" ] && [ "${CT_INIT[$name]}" != 0 ] ||
		die "container $name did not start: $(tail -n 5 "$WORK/ct-$name.err")"
	[ "$comm" = - ] && return 0	# ct_run: not waited for
	CT_PID=$(ct__child "${CT_INIT[$name]}" "$comm") ||
		die "container $name: no process '$comm' in it: $(tail -n 5 "$WORK/ct-$name.err")"
	CT_HOSTPID[$name]=$CT_PID
}

ct_run() {
	local root=$1 name=run$((CT_RUNS += 1)) args=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		args+=("$1" "$2")
		shift 2
	done
	shift
	ct_start "$name" --root "$root" "${args[@]}" --comm - -- "$@"
	if ! ct__gone "$name" "${CT_RUN_SECS:-120}"; then
		echo "note: $* still running after ${CT_RUN_SECS:-120}s: stopped"
	fi
	ct_stop "$name"
	return "$CT_RC"
}

# wait up to secs for the container to be gone; 0 if it is
ct__gone() {	# NAME SECS
	local name=$1 i
	for ((i = 0; i <= $2 * 10; i++)); do
		if [ "${CT_VIA[$name]}" = unshare ]; then
			kill -0 "${CT_HANDLE[$name]}" 2>/dev/null || return 0
		else
			[ "$(podman inspect -f '{{.State.Running}}' "${CT_HANDLE[$name]}" \
				2>/dev/null)" = true ] || return 0
		fi
		[ "$i" -lt $(($2 * 10)) ] && sleep 0.1
	done
	return 1
}

ct_stop() {
	local name=$1 h
	h=${CT_HANDLE[$name]:-}
	[ -n "$h" ] || return 0
	# only while it is up: a PID of a container that ended may be someone else's by now
	ct__gone "$name" 0 || kill -TERM "${CT_HOSTPID[$name]:-${CT_INIT[$name]}}" 2>/dev/null || true
	if ! ct__gone "$name" "$CT_STOP_SECS"; then
		echo "note: container $name still up ${CT_STOP_SECS}s after SIGTERM: killed"
		# PID 1 killed: the kernel kills the rest of its PID namespace
		kill -KILL "${CT_INIT[$name]}" 2>/dev/null || true
		ct__gone "$name" 10 || true
	fi
	if [ "${CT_VIA[$name]}" = unshare ]; then
		CT_RC=0
		wait "$h" 2>/dev/null || CT_RC=$?
	else
		CT_RC=$(podman inspect -f '{{.State.ExitCode}}' "$h" 2>/dev/null || echo 255)
		timeout 60 podman rm -f -t 0 "$h" >/dev/null 2>&1 || true
	fi
	unset "CT_HANDLE[$name]"
}

ct__cleanup() {
	local n ns
	for n in "${CT_NAMES[@]}"; do
		CT_STOP_SECS=3 ct_stop "$n" >/dev/null 2>&1 || true
	done
	for ns in "${CT_NETNSES[@]}"; do
		ip netns del "$ns" 2>/dev/null || true
	done
}
EXIT_HOOKS+=(ct__cleanup)

# what a test killed without its trap left: containers and netns of a pid that is gone
ct__reap_stale() {
	local c ns pid
	for c in $(podman ps -a --format '{{.Names}}' 2>/dev/null | grep '^tt-e2e-[0-9]*-' || true); do
		pid=${c#tt-e2e-}
		pid=${pid%%-*}
		kill -0 "$pid" 2>/dev/null || timeout 60 podman rm -f -t 0 "$c" >/dev/null 2>&1 || true
	done
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^tt-e2e-[0-9]*-' || true); do
		pid=${ns#tt-e2e-}
		pid=${pid%%-*}
		kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null || true
	done
}
ct__reap_stale
