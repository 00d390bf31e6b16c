#!/bin/sh
# What this kernel offers tokentrace, one fact a line in $OUT/probe.txt (summarized into
# tests/kernels/README.md): tracepoints in tracefs, whether kprobe_events takes a kprobe,
# which functions ftrace can hook (fentry/fexit need that and BTF), hookprobe's load/attach/
# fire results per hook and helper, and bpftool's map and helper probe.
# Runs in a guest (boot.sh) or on the host: TT holds the binaries, OUT the results.
# Needs root. BPFTOOL may name bpftool (default: from PATH).
set -u
T=/sys/kernel/tracing
[ -d $T/events ] || T=/sys/kernel/debug/tracing
BPFTOOL=${BPFTOOL:-bpftool}
P=$OUT/probe.txt

yn() {
	if "$@"; then echo yes; else echo no; fi
}

{
	echo "kernel $(uname -r)"
	echo "btf-vmlinux $(yn test -r /sys/kernel/btf/vmlinux)"
	echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	echo "lockdown $(cat /sys/kernel/security/lockdown 2>/dev/null || echo unknown)"
	echo "unprivileged_bpf_disabled $(cat /proc/sys/kernel/unprivileged_bpf_disabled)"
	for tp in sock/sock_send_length sock/sock_recv_length sock/sk_data_ready \
		sock/inet_sock_set_state tcp/tcp_retransmit_skb tcp/tcp_probe \
		sched/sched_switch sched/sched_wakeup sched/sched_wakeup_new \
		syscalls/sys_exit_write syscalls/sys_exit_read syscalls/sys_exit_writev \
		syscalls/sys_exit_readv syscalls/sys_exit_sendto syscalls/sys_exit_recvfrom \
		syscalls/sys_exit_sendmsg syscalls/sys_exit_recvmsg syscalls/sys_exit_sendmmsg \
		syscalls/sys_exit_recvmmsg syscalls/sys_exit_accept syscalls/sys_exit_accept4 \
		syscalls/sys_enter_write syscalls/sys_enter_sendto; do
		echo "tracepoint ${tp%%/*}:${tp#*/} $(yn test -d $T/events/$tp)"
	done
	# the tracefs format says whether prev_state is a field; the raw tracepoint's arguments
	# (prev_state is the 4th since 5.18) are in hookprobe's btf-rawtp line
	echo "sched_switch-format-prev_state $(yn grep -q prev_state \
		$T/events/sched/sched_switch/format 2>/dev/null)"
	if [ -e $T/kprobe_events ]; then
		if echo 'p:ttprobe/sendmsg sock_sendmsg' >>$T/kprobe_events 2>/dev/null; then
			echo "kprobe_events sock_sendmsg ok"
			echo '-:ttprobe/sendmsg' >>$T/kprobe_events
		else
			echo "kprobe_events sock_sendmsg refused"
		fi
	else
		echo "kprobe_events absent"
	fi
	# fentry/fexit attach through ftrace: the function must be traceable
	if cat $T/available_filter_functions >$OUT/ftrace-funcs.tmp 2>$OUT/ftrace.err; then
		for f in sock_sendmsg sock_recvmsg __sock_sendmsg sock_write_iter sock_read_iter \
			inet_sendmsg inet_recvmsg inet6_sendmsg inet6_recvmsg tcp_sendmsg \
			tcp_recvmsg security_socket_sendmsg security_socket_recvmsg; do
			echo "ftrace-func $f $(yn grep -q "^$f\( \|$\)" $OUT/ftrace-funcs.tmp)"
		done
	else
		echo "ftrace-funcs unreadable: $(sed 's/.*: //' $OUT/ftrace.err)"
	fi
	rm -f $OUT/ftrace-funcs.tmp $OUT/ftrace.err
} >$P 2>&1

"$TT/hookprobe" >>$P 2>$OUT/hookprobe.err
echo "hookprobe-rc $?" >>$P

# bpftool probes each helper per program type by loading a program that calls it
if "$BPFTOOL" feature probe kernel >$OUT/bpftool-feature.txt 2>&1; then
	grep -E "map_type (ringbuf|task_storage|hash|lru_hash|percpu_array|stack_trace) " \
		$OUT/bpftool-feature.txt | sed 's/^eBPF //; s/^/bpftool /' >>$P
	# (bpftool cannot probe tracing programs, fentry/fexit/tp_btf: they need a target;
	# hookprobe's helper lines load real ones)
	for h in bpf_loop bpf_task_pt_regs bpf_get_current_task_btf bpf_ringbuf_output \
		bpf_ringbuf_query bpf_get_attach_cookie bpf_get_stackid bpf_probe_read_user; do
		for pt in kprobe raw_tracepoint; do
			awk -v pt="$pt" -v h="$h" '
				/^eBPF helpers supported for program type / {
					cur = $NF; sub(/:$/, "", cur) }
				cur == pt && $NF == h { found = 1 }
				END { printf "bpftool helper %s %s %s\n", h, pt, found ? "yes" : "no" }' \
				$OUT/bpftool-feature.txt >>$P
		done
	done
else
	echo "bpftool feature probe failed" >>$P
fi
