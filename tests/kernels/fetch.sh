#!/bin/sh
# Fetch the kernel images of tests/kernels/kernels.conf from the distribution's packages,
# without installing them: apt-get download + dpkg-deb -x into .output/kernels/cache/.
# An entry may instead name a file (a path starting with / or ./): a .deb, a kernel-core
# .rpm or a bare vmlinuz, for kernels of other distributions.
# Only /boot is kept (vmlinuz, config, System.map): the cloud kernels build in all the guest
# uses, so no modules are needed.
#
#   tests/kernels/fetch.sh [NAME...]     prints "NAME PACKAGE VMLINUZ" per kernel
#
# A package already unpacked is not downloaded again. When apt cannot resolve a package
# (no lists yet, no network) the last image fetched for that NAME is used. The host's own
# kernel needs nothing: matrix.sh runs on it directly.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=$ROOT/.output/kernels/cache
CONF=${KERNELS_CONF:-$HERE/kernels.conf}
mkdir -p "$CACHE"

# the image package behind PACKAGE: what a meta package depends on, or PACKAGE itself (an
# image package depends on no other linux-image)
resolve() {
	apt-cache show --no-all-versions "$1" >/dev/null 2>&1 || return 0
	dep=$(apt-cache depends --no-recommends --no-suggests "$1" 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	echo "${dep:-$1}"
}

# a kernel from a file: a .deb, an .rpm (kernel-core: the image is in /lib/modules/*/), or
# the image itself
fetch_file() {
	name=$1
	f=$2
	[ -r "$f" ] || { echo "fetch: $name: no file $f" >&2; return 1; }
	case $f in
	*.deb | *.rpm) ;;
	*) echo "$name $(basename "$f") $f"; return 0 ;;
	esac
	dir=$CACHE/$(basename "$f")
	if ! ls "$dir"/boot/vmlinu[xz]-* >/dev/null 2>&1; then
		rm -rf "$dir"
		mkdir -p "$dir/x" "$dir/boot"
		case $f in
		*.deb) dpkg-deb -x "$f" "$dir/x" ;;
		*.rpm) (cd "$dir/x" && busybox rpm2cpio "$f" | cpio -idm --quiet) ;;
		esac
		for k in "$dir"/x/boot/vmlinu[xz]-* "$dir"/x/lib/modules/*/vmlinuz \
			"$dir"/x/usr/lib/modules/*/vmlinuz; do
			[ -f "$k" ] || continue
			case $k in
			*/modules/*) v=${k%/vmlinuz}; cp "$k" "$dir/boot/vmlinuz-${v##*/}" ;;
			*) cp "$k" "$dir/boot/" ;;
			esac
		done
		rm -rf "$dir/x"
	fi
	k=$(ls "$dir"/boot/vmlinu[xz]-* 2>/dev/null | head -n 1)
	[ -n "$k" ] || { echo "fetch: $f holds no kernel image" >&2; return 1; }
	echo "$name $(basename "$f") $k"
}

fetch_one() {
	name=$1
	pkg=$2
	case $pkg in
	/* | ./*) fetch_file "$name" "$pkg"; return ;;
	esac
	img=$(resolve "$pkg")
	if [ -z "$img" ] && [ "$(id -u)" -eq 0 ]; then
		echo "fetch: $pkg unknown to apt; apt-get update" >&2
		apt-get update -qq >&2 || true
		img=$(resolve "$pkg")
	fi
	if [ -z "$img" ]; then
		if [ -s "$CACHE/$name.last" ]; then
			echo "fetch: $pkg unresolved; using the last fetched $(cat "$CACHE/$name.last")" >&2
			img=$(cat "$CACHE/$name.last")
		else
			echo "fetch: cannot resolve $pkg to a kernel image package" >&2
			return 1
		fi
	fi
	dir=$CACHE/$img
	if ! ls "$dir"/boot/vmlinuz-* >/dev/null 2>&1; then
		tmp=$(mktemp -d "$CACHE/.dl.XXXXXX")
		echo "fetch: downloading $img" >&2
		# as root apt would hand the download to user _apt, who cannot write here
		if ! (cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "$img" >&2); then
			rm -rf "$tmp"
			echo "fetch: apt-get download $img failed" >&2
			return 1
		fi
		mkdir -p "$tmp/x"
		dpkg-deb -x "$tmp"/*.deb "$tmp/x"
		if ! ls "$tmp"/x/boot/vmlinuz-* >/dev/null 2>&1; then
			rm -rf "$tmp"
			echo "fetch: $img holds no /boot/vmlinuz-*" >&2
			return 1
		fi
		rm -rf "$dir"
		mkdir -p "$dir"
		mv "$tmp/x/boot" "$dir/boot"
		rm -rf "$tmp"
	fi
	echo "$img" >"$CACHE/$name.last"
	echo "$name $img $(ls "$dir"/boot/vmlinuz-* | head -n 1)"
}

grep -v '^[[:space:]]*\(#\|$\)' "$CONF" | while read -r name pkg; do
	if [ $# -gt 0 ]; then
		want=
		for n in "$@"; do
			[ "$n" = "$name" ] && want=1
		done
		[ -n "$want" ] || continue
	fi
	fetch_one "$name" "$pkg" || echo "$name - -"
done
