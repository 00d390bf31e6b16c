#!/bin/sh
# Build the test initramfs: busybox, the host's built tokentrace, tokensim (+libtsengine.so),
# tokenload, bpftool and tests/kernels' hookprobe, every shared library they load (from ldd),
# the guest scripts (tests/kernels/guest/) and init.sh as /init. No kernel modules: the
# cloud kernels build in all that is used (BTF, BPF, tracefs, kprobes, the 8250 serial port).
#
#   tests/kernels/mkinitrd.sh          writes .output/kernels/initrd.img, prints its path
#
# Run `make` first: it packs what the host built, so the guest runs the same binaries.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUTD=$ROOT/.output/kernels
STAGE=$OUTD/rootfs
IMG=$OUTD/initrd.img
BPFTOOL=${BPFTOOL:-$(command -v bpftool || echo /usr/sbin/bpftool)}
BUSYBOX=${BUSYBOX:-/bin/busybox}
CC=${CC:-gcc}
MULTIARCH=$($CC -dumpmachine)
LIBBPF_A=${LIBBPF_A:-/usr/lib/$MULTIARCH/libbpf.a}

die() {
	echo "mkinitrd: $*" >&2
	exit 1
}

for f in "$ROOT/tokentrace" "$ROOT/.output/tokensim" "$ROOT/.output/libtsengine.so" \
	"$ROOT/.output/tokenload"; do
	[ -x "$f" ] || die "$f is missing: run make first"
done
[ -x "$BUSYBOX" ] && "$BUSYBOX" --list >/dev/null 2>&1 ||
	die "no static busybox at $BUSYBOX (apt-get install busybox-static)"
command -v cpio >/dev/null || die "cpio is missing (apt-get install cpio)"
mkdir -p "$OUTD"

# hookprobe: built here, not by the top-level Makefile, since only the guests run it
HP=$OUTD/hookprobe
if [ ! -x "$HP" ] || [ "$HERE/hookprobe.c" -nt "$HP" ] || [ "$HERE/hookprobe.bpf.c" -nt "$HP" ]
then
	echo "mkinitrd: building hookprobe" >&2
	clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -I"$ROOT/vmlinux/x86" \
		-idirafter "/usr/include/$MULTIARCH" -c "$HERE/hookprobe.bpf.c" -o "$OUTD/hookprobe.tmp.o"
	"$BPFTOOL" gen object "$OUTD/hookprobe.bpf.o" "$OUTD/hookprobe.tmp.o"
	rm -f "$OUTD/hookprobe.tmp.o"
	"$BPFTOOL" gen skeleton "$OUTD/hookprobe.bpf.o" >"$OUTD/hookprobe.skel.h"
	$CC -g -O2 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
		-I"$OUTD" "$HERE/hookprobe.c" "$LIBBPF_A" -lelf -lz -o "$HP"
fi

rm -rf "$STAGE"
mkdir -p "$STAGE"
cd "$STAGE"
mkdir -p bin sbin usr/bin usr/sbin lib64 etc proc sys dev tmp out tt/guest
cp "$BUSYBOX" bin/busybox
for a in $(bin/busybox --list); do
	[ "$a" = busybox ] || [ -e "bin/$a" ] || ln -s busybox "bin/$a"
done
cp "$HERE/init.sh" init
cp "$HERE"/guest/*.sh tt/guest/
cp "$ROOT/tokentrace" "$ROOT/.output/tokensim" "$ROOT/.output/libtsengine.so" \
	"$ROOT/.output/tokenload" "$HP" tt/
cp "$BPFTOOL" usr/sbin/bpftool
chmod 755 init tt/guest/*.sh

# every library the binaries need, at the path the host's loader found it
for bin in tt/tokentrace tt/tokensim tt/tokenload tt/hookprobe usr/sbin/bpftool; do
	ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | sort -u | while read -r lib; do
	mkdir -p ".$(dirname "$lib")"
	cp -L "$lib" ".$lib"
done
# the loader's search path inside the guest: a cache of what was just copied
echo "/lib/$MULTIARCH" >etc/ld.so.conf
echo "/usr/lib/$MULTIARCH" >>etc/ld.so.conf
ldconfig -r "$STAGE" 2>/dev/null || true

find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -6 >"$IMG.tmp"
mv "$IMG.tmp" "$IMG"
echo "mkinitrd: $IMG ($(du -k "$IMG" | cut -f1) KiB)" >&2
echo "$IMG"
