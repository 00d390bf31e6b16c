#!/bin/sh
# /init of the test initramfs (mkinitrd.sh). Mounts what tokentrace needs, runs one test
# script, streams every file the script left in $OUT to the host over the second serial port
# (ttyS1: the kernel's own console is ttyS0, so nothing interleaves), then powers off.
#
# Wire format on ttyS1, line by line:
#   ==TT-START <uname -r>==
#   ==TT-BEGIN <file>==   base64 of the file   ==TT-END <file>==
#   ==TT-DONE rc=<script exit code>==
# The script is /tt/script.sh (appended to the initramfs by boot.sh), or /tt/guest/NAME.sh
# for tt_script=NAME on the kernel command line.
export PATH=/tt:/bin:/sbin:/usr/bin:/usr/sbin
export TT=/tt OUT=/out TMPDIR=/tmp HOME=/

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
ip link set lo up
# BPF memory is charged to the memory cgroup since 5.11, to RLIMIT_MEMLOCK before
ulimit -l unlimited

R=/dev/ttyS1
stty -F $R raw -echo 2>/dev/null
mkdir -p $OUT
echo "==TT-START $(uname -r)==" >$R

script=/tt/script.sh
for arg in $(cat /proc/cmdline); do
	case $arg in
	tt_script=*) script=/tt/guest/${arg#tt_script=}.sh ;;
	tt_hooks=*) export TT_HOOKS=${arg#tt_hooks=} ;;
	esac
done
echo "tt-init: kernel $(uname -r), clocksource" \
	"$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource), running $script"
start=$(cut -d' ' -f1 /proc/uptime)
sh $script >$OUT/script.log 2>&1
rc=$?
echo "guest_uptime_start=$start guest_uptime_end=$(cut -d' ' -f1 /proc/uptime)" >>$OUT/script.log
echo "tt-init: $script exited $rc"

for f in $OUT/*; do
	[ -f "$f" ] || continue
	n=${f##*/}
	{
		echo "==TT-BEGIN $n=="
		base64 <"$f"
		echo "==TT-END $n=="
	} >$R
done
echo "==TT-DONE rc=$rc==" >$R
sync
poweroff -f
