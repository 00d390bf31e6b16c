#!/bin/bash
# A Debian root filesystem for the container tests, made at test time and cached.
#
#   tests/lib/rootfs.sh NAME            build it if missing; print its path
#   tests/lib/rootfs.sh --path NAME     print where it would be, build nothing
#   tests/lib/rootfs.sh --list          the names, with their suite and packages
#
# NAMEs (one place to say what each test's root holds; keep them small, CI builds each once
# per run on an empty cache):
#   trixie   Debian 13: CPython 3.13 and tests/stacks/python's packages
#   sid      Debian unstable: CPython 3.14, the same Python packages, llama.cpp's
#            llama-server (llama.cpp-tools) and python3-gguf to write a model with
#
# A root is debootstrap --variant=minbase from Debian's archive, then `apt-get install
# --no-install-recommends` inside it: apt resolves virtual packages (debootstrap does not)
# and fetches over one pipelined connection, where debootstrap's --include fetches one file
# at a time. It lives under $TT_ROOTFS_CACHE (/var/cache/tokentrace/rootfs) as SUITE-HASH,
# the hash over the suite, the package list and this recipe's version, so changing either
# makes a new root. It is built in a temporary folder beside it and renamed into place when
# complete: a root is used only when whole, and an interrupted build (a kill, a timeout) leaves
# a temporary folder that the next build removes. Builds run in their own PID and mount
# namespaces, so a kill takes every process and mount of the build with it. A lock per root
# makes two tests that want the same one at once build it once.
#
#   TT_DEBIAN_MIRROR   the archive (default: the first URIs of the host's deb.debian.org source)
set -euo pipefail

RECIPE=1	# bump when the way a root is made changes
CACHE=${TT_ROOTFS_CACHE:-/var/cache/tokentrace/rootfs}
PY_STACK="python3 python3-fastapi python3-uvicorn python3-h11 python3-httptools python3-uvloop \
python3-zmq python3-msgpack"

spec() {	# NAME: sets SUITE and PKGS
	case $1 in
	trixie) SUITE=trixie PKGS="$PY_STACK" ;;
	sid) SUITE=sid PKGS="$PY_STACK llama.cpp-tools python3-gguf" ;;
	*) echo "rootfs: unknown root '$1' (see --list)" >&2; exit 2 ;;
	esac
}

mirror() {
	local m=${TT_DEBIAN_MIRROR:-}
	if [ -z "$m" ]; then
		m=$(sed -n 's|^URIs: *\(http[^ ]*deb\.debian\.org/debian\)/*$|\1|p' \
			/etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
	fi
	echo "${m:-http://deb.debian.org/debian}"
}

path_of() {	# NAME: the cache path
	spec "$1"
	local key
	key=$(printf '%s\n' "recipe $RECIPE" "suite $SUITE" $(printf '%s\n' $PKGS | sort -u) |
		sha256sum | cut -c1-12)
	echo "$CACHE/$SUITE-$key"
}

# remove a temporary root an interrupted build left: its mounts went with the build's mount
# namespace; --one-file-system in case one did not
discard() {
	[ -e "$1" ] || return 0
	if findmnt -rno TARGET | grep -q "^$1/"; then
		echo "rootfs: $1 still has mounts; left as it is" >&2
		return 1
	fi
	rm -rf --one-file-system "$1"
}

# inside the build's own namespaces (see build): debootstrap, then apt inside the root
build_inner() {	# TMP SUITE MIRROR PKGS...
	local tmp=$1 suite=$2 mirror=$3
	shift 3
	local t0=$SECONDS
	# no documentation, manuals or translations: smaller and faster to unpack
	mkdir -p "$tmp/etc/dpkg/dpkg.cfg.d"
	cat >"$tmp/etc/dpkg/dpkg.cfg.d/01-tokentrace-small" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF
	debootstrap --variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
		"$suite" "$tmp" "$mirror" >"$tmp.log" 2>&1 ||
		{ tail -n 20 "$tmp.log" >&2; echo "rootfs: debootstrap $suite failed" >&2; return 1; }
	echo "rootfs: debootstrap $suite: $((SECONDS - t0))s" >&2
	t0=$SECONDS
	# unstable's Release file is often past its Valid-Until here; no service starts in a root
	echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99-tokentrace"
	echo 'APT::Install-Recommends "false";' >>"$tmp/etc/apt/apt.conf.d/99-tokentrace"
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod +x "$tmp/usr/sbin/policy-rc.d"
	cp /etc/resolv.conf "$tmp/etc/resolv.conf" 2>/dev/null || true
	mount -t proc proc "$tmp/proc"
	local apt=(chroot "$tmp" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 apt-get -q -y)
	if ! { "${apt[@]}" update && "${apt[@]}" install "$@" && "${apt[@]}" -f install &&
		"${apt[@]}" clean; } >>"$tmp.log" 2>&1; then
		tail -n 20 "$tmp.log" >&2
		echo "rootfs: apt-get install in $suite failed" >&2
		return 1
	fi
	umount "$tmp/proc"
	rm -rf "$tmp/var/lib/apt/lists/"* "$tmp/var/cache/apt/"*.bin
	echo "rootfs: apt-get install $#: $((SECONDS - t0))s" >&2
}

build() {	# NAME FINAL
	local name=$1 final=$2 tmp
	tmp=$(dirname "$final")/.tmp-$(basename "$final")
	discard "$tmp" && rm -f "$tmp.log"
	mkdir -p "$tmp"
	echo "rootfs: building $name ($SUITE: $PKGS) in $tmp" >&2
	local t0=$SECONDS
	# own PID and mount namespaces: debootstrap's and apt's mounts of /proc and /sys inside
	# the root, and every process of the build, end with it, however it ends
	unshare --pid --mount --fork --kill-child --propagation private \
		"$0" --build-inner "$tmp" "$SUITE" "$(mirror)" $PKGS
	mv -T "$tmp" "$final"
	mv -f "$tmp.log" "$final.log"
	echo "rootfs: $name ready in $((SECONDS - t0))s: $final ($(du -sh "$final" | cut -f1))" >&2
}

case ${1:-} in
--build-inner)
	shift
	build_inner "$@"
	;;
--path)
	path_of "${2:?rootfs: --path NAME}"
	;;
--list)
	for n in trixie sid; do
		spec $n
		echo "$n: $SUITE: $PKGS"
	done
	;;
"" | -*)
	sed -n '2,/^set /p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
	;;
*)
	name=$1
	spec "$name"
	final=$(path_of "$name")
	if [ ! -d "$final" ]; then
		command -v debootstrap >/dev/null ||
			{ echo "rootfs: debootstrap is missing (tools/install-deps.sh)" >&2; exit 1; }
		[ "$(id -u)" -eq 0 ] || { echo "rootfs: building a root needs root" >&2; exit 1; }
		mkdir -p "$CACHE"
		exec 9>"$final.lock"
		flock 9
		# another test may have built it while this one waited for the lock
		[ -d "$final" ] || build "$name" "$final"
	fi
	echo "$final"
	;;
esac
