/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python stacks of a live CPython 3.11 process, shared by bpf/lib/python.bpf.h and user/.
 *
 * CPython 3.11 and the distributions' builds of it keep no frame pointers, so Python code is
 * named from the interpreter's own structures: _PyRuntime -> interpreters -> thread states
 * (matched by native thread id) -> _PyCFrame.current_frame -> _PyInterpreterFrame chain. A
 * frame gives its code object and the instruction it was at; userspace turns both into
 * "function (file.py:line)" (user/sys/pysym.c). The offsets of the fields walked come from
 * the process's version (user/sys/pyinfo.c), checked against the installed headers by
 * tests/unit/sys/test_pyoffsets.c; the kernel side takes them from the py_procs map, never
 * from constants of its own.
 */
#ifndef TT_PYSTACK_H
#define TT_PYSTACK_H

#include "events.h"

#define TT_PY_DEPTH	32	/* frames per record, innermost first */
#define TT_PY_THREADS	64	/* thread states walked per interpreter to find a thread */
#define TT_PY_INTERPS	4	/* interpreters walked (subinterpreters are rare) */

/* Byte offsets of the fields walked; all fit 16 bits. One set per supported version. */
struct tt_py_offsets {
	/* _PyRuntimeState */
	__u16 rt_interp_head;		/* interpreters.head */
	__u16 rt_tstate_current;	/* gilstate.tstate_current: the GIL holder's thread */
	__u16 rt_gil;			/* ceval.gil: struct _gil_runtime_state */
	/* struct _gil_runtime_state */
	__u16 gil_last_holder;		/* PyThreadState * */
	__u16 gil_locked;		/* int: taken now */
	__u16 gil_cond;			/* pthread_cond_t: waiters of take_gil() sleep here */
	__u16 gil_mutex;		/* pthread_mutex_t guarding it */
	__u16 gil_switch_cond;		/* FORCE_SWITCHING: a dropper waits here for a taker */
	__u16 gil_switch_mutex;
	__u16 cond_size;		/* sizeof(pthread_cond_t) */
	__u16 mutex_size;		/* sizeof(pthread_mutex_t) */
	/* PyInterpreterState */
	__u16 interp_next;
	__u16 interp_threads_head;
	/* PyThreadState */
	__u16 ts_next;
	__u16 ts_interp;
	__u16 ts_cframe;
	__u16 ts_native_tid;		/* unsigned long: the kernel's tid */
	/* _PyCFrame */
	__u16 cframe_current;
	/* _PyInterpreterFrame */
	__u16 fr_code;
	__u16 fr_previous;
	__u16 fr_prev_instr;		/* _Py_CODEUNIT *: the unit before the next instruction */
	__u16 fr_is_entry;		/* bool: entered from C (a C boundary under this frame) */
	__u16 fr_owner;			/* char: FRAME_OWNED_BY_THREAD / GENERATOR / FRAME_OBJECT */
	/* PyCodeObject */
	__u16 co_firstlineno;
	__u16 co_filename;
	__u16 co_name;
	__u16 co_qualname;
	__u16 co_linetable;
	__u16 co_code_adaptive;		/* the instructions: lasti counts code units from here */
	/* PyObject, PyASCIIObject / PyCompactUnicodeObject, PyBytesObject */
	__u16 ob_type;
	__u16 str_length;
	__u16 str_state;		/* bit field: interned:2 kind:3 compact:1 ascii:1 ready:1 */
	__u16 str_ascii_data;		/* sizeof(PyASCIIObject): compact ASCII data */
	__u16 str_compact_data;		/* sizeof(PyCompactUnicodeObject): other compact data */
	__u16 bytes_size;		/* ob_size */
	__u16 bytes_data;		/* ob_sval */
};

/*
 * The kernel reads fields close together at once (pyinfo checks they fit, for every
 * version): a frame's from fr_code (previous, prev_instr, is_entry, owner); a thread
 * state's from ts_cframe up to ts_native_tid; the GIL's last_holder and locked.
 */
#define TT_PY_FRAME_CHUNK	40
#define TT_PY_TS_CHUNK		128	/* a power of two */
#define TT_PY_GIL_CHUNK		16

/* Value of the py_procs map (key: tgid), filled by userspace (pysampler__add_proc). */
struct tt_py_proc {
	__u64 runtime;			/* address of _PyRuntime in the process */
	__u32 version;			/* Py_Version: 0x030b02f0 is 3.11.2 final */
	__u32 pad;
	/* the type objects, for userspace to check what a pointer points at (pysym.c) */
	__u64 code_type;		/* &PyCode_Type */
	__u64 str_type;			/* &PyUnicode_Type */
	__u64 bytes_type;		/* &PyBytes_Type */
	struct tt_py_offsets off;
};

enum tt_py_kind {
	TT_PY_SAMPLE = 1,	/* the thread was on CPU (a cpu-clock tick) */
	TT_PY_BLOCKED = 2,	/* the thread went off CPU blocked, at this frame */
};

/* Which of the GIL's futexes a thread blocked on (Python/ceval_gil.h, 3.11) */
enum tt_py_gil {
	TT_PY_GIL_NONE = 0,	/* not blocked on the GIL */
	TT_PY_GIL_WAIT = 1,	/* its cond: in take_gil(), waiting for gil_holder to drop it */
	TT_PY_GIL_MUTEX = 2,	/* its mutex, or the cond's own lock: taking or dropping, briefly */
	TT_PY_GIL_SWITCH = 3,	/* switch_cond/mutex: in drop_gil(), waiting for a taker */
};

/* tt_pystack_ev.flags */
#define TT_PYF_NO_TSTATE	0x01	/* no thread state with this tid: not (yet) Python's */
#define TT_PYF_TRUNC		0x02	/* deeper than TT_PY_DEPTH: outer frames left out */
#define TT_PYF_FAULT		0x04	/* a read failed during the walk: the stack is partial */
#define TT_PYF_KERNEL		0x08	/* sample: the thread was in the kernel (a syscall) */
#define TT_PYF_GIL_LOCKED	0x10	/* the GIL was taken at that moment */
#define TT_PYF_HOLDS_GIL	0x20	/* ... by this thread */

/* tt_py_frame.flags */
#define TT_PYFR_ENTRY		0x01	/* is_entry: called from C, a native boundary under it */
#define TT_PYFR_OWNER_MASK	0x06	/* owner << 1 */

struct tt_py_frame {
	__u64 code;	/* PyCodeObject * in the process */
	__s32 lasti;	/* code units from co_code_adaptive to prev_instr; -1 before the first */
	__u32 flags;
};

/*
 * TT_EV_PYSTACK: Python frames of thread h.tid. Only nframes frames follow: h.size is
 * offsetof(frames) + nframes * sizeof(frame). For BLOCKED, h.ts is the switch-out's time
 * when the scheduler hook gave it, so the record joins its TT_EV_SCHED by (tid, ts).
 */
struct tt_pystack_ev {
	struct tt_hdr h;
	__u8 kind;		/* enum tt_py_kind */
	__u8 nframes;
	__u8 flags;		/* TT_PYF_* */
	__u8 gil;		/* enum tt_py_gil */
	__u32 sysnr;		/* BLOCKED: the syscall it blocked in, or -1 */
	__u64 futex;		/* BLOCKED in futex(): the futex word's address, else 0 */
	__u32 gil_holder;	/* native tid of the GIL's last holder, 0 if unknown */
	__u32 pad;
	struct tt_py_frame frames[TT_PY_DEPTH];
};

#define TT_PYSTACK_HDR_SIZE	__builtin_offsetof(struct tt_pystack_ev, frames)

/* per-CPU counters in the py_stats map, summed by userspace (pysampler__read_stats) */
enum tt_py_stat {
	TT_PY_STAT_SAMPLES,	/* samples of traced Python processes' threads */
	TT_PY_STAT_BLOCKED,	/* blocking switch-outs walked */
	TT_PY_STAT_NO_TSTATE,	/* a thread with no thread state (a native thread, or too new) */
	TT_PY_STAT_FAULT,	/* a walk ended on a read that failed */
	TT_PY_STAT_TRUNC,	/* a stack deeper than TT_PY_DEPTH */
	TT_PY_STAT_NR,
};

#endif /* TT_PYSTACK_H */
