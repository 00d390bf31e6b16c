#!/bin/bash
# Boot a kernel under qemu with the test initramfs, run one script in it, and unpack what
# the script left in the guest's $OUT into a result directory on the host.
#
#   tests/kernels/boot.sh KERNEL_IMAGE SCRIPT [RESULT_DIR]
#
# SCRIPT is a host file (run as /tt/script.sh in the guest, with TT=/tt holding the binaries
# and OUT=/out for its results) or the name of one in tests/kernels/guest/ (probe, trace).
# RESULT_DIR (default .output/kernels/run/<kernel file name>) gets every file of the guest's
# $OUT, plus console.log (the kernel's serial console), rc (the script's exit code) and
# time (seconds from qemu's start to its exit).
#
# Exit status: 0 when the guest ran the script to the end and powered off (whatever the
# script's own exit code, which is in RESULT_DIR/rc), 1 when it did not (a panic, a hang
# cut at the timeout, a lost result), 2 on bad usage.
#
# Environment: TIMEOUT (seconds, default 300), ACCEL (tcg: both vCPUs in one host thread,
# the default; mttcg: a thread per vCPU; kvm: fails on these machines, which expose /dev/kvm
# but no VMX), MEM (MiB, default 2048), SMP (default 2),
# INITRD (default .output/kernels/initrd.img, built by mkinitrd.sh when missing), APPEND
# (more kernel parameters).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
KERNEL=$1
SCRIPT=$2
RES=${3:-$ROOT/.output/kernels/run/$(basename "$KERNEL")}
TIMEOUT=${TIMEOUT:-300}
ACCEL=${ACCEL:-tcg}
INITRD=${INITRD:-$ROOT/.output/kernels/initrd.img}

[ -r "$KERNEL" ] || { echo "boot: no kernel image $KERNEL" >&2; exit 2; }
if [ ! -f "$SCRIPT" ] && [ -f "$HERE/guest/$SCRIPT.sh" ]; then
	SCRIPT=$HERE/guest/$SCRIPT.sh
fi
[ -f "$SCRIPT" ] || { echo "boot: no script $SCRIPT" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "boot: qemu-system-x86_64 is missing (apt-get install qemu-system-x86)" >&2; exit 2; }
[ -f "$INITRD" ] || "$HERE/mkinitrd.sh" >/dev/null

# One host thread runs both vCPUs by default: with a thread per vCPU (mttcg) the cloud
# kernels now and then oops on an int3 left by live code patching (text_poke_bp, e.g. the
# static key of net_get_random_once in inet_ehashfn at the first TCP connection) that the
# other vCPU still executes.
case $ACCEL in
kvm) ACCEL_ARGS=(-accel kvm -cpu host) ;;
mttcg) ACCEL_ARGS=(-accel tcg,thread=multi -cpu max) ;;
*) ACCEL_ARGS=(-accel tcg,thread=single -cpu max) ;;
esac

rm -rf "$RES"
mkdir -p "$RES"
WORK=$(mktemp -d /tmp/tt-boot.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# The script rides in its own uncompressed cpio archive ahead of the prebuilt one: the kernel
# unpacks a chain of archives, so a new script needs no rebuilt image. (After a gzip member
# it looks for the next archive at the wrong offset: "Initramfs unpacking failed: invalid
# magic", so the plain one goes first.)
mkdir -p "$WORK/root/tt"
cp "$SCRIPT" "$WORK/root/tt/script.sh"
chmod 755 "$WORK/root/tt/script.sh"
(cd "$WORK/root" && printf 'tt\ntt/script.sh\n' | cpio -o -H newc -R 0:0 --quiet) >"$WORK/script.cpio"
cat "$WORK/script.cpio" "$INITRD" >"$WORK/initrd"

# No NIC (-nic none): the guest has loopback only. panic=-1 and -no-reboot turn a panic into
# qemu's exit instead of a hang until the timeout.
t0=$(date +%s.%N)
rc=0
timeout -k 5 "$TIMEOUT" qemu-system-x86_64 "${ACCEL_ARGS[@]}" -m "${MEM:-2048}" \
	-smp "${SMP:-2}" -nic none -display none -monitor none -no-reboot \
	-serial "file:$RES/console.log" -serial "file:$WORK/results.raw" \
	-kernel "$KERNEL" -initrd "$WORK/initrd" \
	-append "console=ttyS0 panic=-1 quiet loglevel=4 ${APPEND:-}" </dev/null \
	>"$WORK/qemu.out" 2>&1 || rc=$?
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >"$RES/time"
[ -s "$WORK/qemu.out" ] && cp "$WORK/qemu.out" "$RES/qemu.out"
cp "$WORK/results.raw" "$RES/results.raw" 2>/dev/null || true

# Unpack: base64 between ==TT-BEGIN name== and ==TT-END name==, the script's code at DONE.
tr -d '\r' <"$WORK/results.raw" | awk -v dir="$RES" '
	/^==TT-BEGIN .*==$/ { name = substr($0, 12, length($0) - 13); f = dir "/" name ".b64";
			      printf "" > f; next }
	/^==TT-END .*==$/ { close(f); f = ""; next }
	/^==TT-DONE rc=[0-9]+==$/ { rc = substr($0, 14, length($0) - 15); print rc > (dir "/rc"); next }
	/^==TT-START .*==$/ { print substr($0, 12, length($0) - 13) > (dir "/uname"); next }
	f != "" { print >> f }'
for b in "$RES"/*.b64; do
	[ -e "$b" ] || continue
	base64 -d <"$b" >"${b%.b64}" || echo "boot: ${b##*/} did not decode" >&2
	rm -f "$b"
done

if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	echo "boot: $(basename "$KERNEL"): timed out after ${TIMEOUT}s (console: $RES/console.log)" >&2
	exit 1
fi
if [ ! -f "$RES/rc" ]; then
	echo "boot: $(basename "$KERNEL"): the guest did not finish (qemu exit $rc, console:" \
		"$RES/console.log)" >&2
	tail -n 5 "$RES/console.log" >&2 || true
	exit 1
fi
exit 0
