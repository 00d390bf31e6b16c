/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How the stream fuzzers turn one input into the calls a live capture makes: a short script
 * of operations, then the payload they consume.
 *
 *   byte 0     flags, for the fuzzer to use (end of stream, direction, ...)
 *   byte 1     number of operations n
 *   2n bytes   operations: (kind, arg)
 *   rest       payload
 *
 * kind & 3: 0, 1 feed the next arg + 1 payload bytes as one syscall's capture;
 *           2     a gap of arg bytes (arg << 32 when kind & 0x80: a huge send), which also
 *                 skips that many payload bytes, as an uncaptured tail would;
 *           3     an event of the fuzzer's choosing (EOF, end, reset), by kind >> 2.
 * Whatever payload the script leaves is fed at the end in one piece.
 */
#ifndef TT_FUZZ_SCRIPT_H
#define TT_FUZZ_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

struct fuzz_ops {
	void (*feed)(void *ud, const uint8_t *d, size_t len);
	void (*gap)(void *ud, uint64_t len);
	void (*event)(void *ud, unsigned which);
};

static inline uint8_t fuzz_script_flags(const uint8_t *data, size_t size)
{
	return size ? data[0] : 0;
}

static inline void fuzz_script_run(const uint8_t *data, size_t size, const struct fuzz_ops *ops,
				   void *ud)
{
	size_t nops, pos, i;

	if (size < 2)
		return;
	nops = data[1];
	if (nops > (size - 2) / 2)
		nops = (size - 2) / 2;
	pos = 2 + 2 * nops;
	for (i = 0; i < nops; i++) {
		uint8_t kind = data[2 + 2 * i], arg = data[3 + 2 * i];
		size_t left = size - pos;

		switch (kind & 3) {
		case 0:
		case 1: {
			size_t n = (size_t)arg + 1 < left ? (size_t)arg + 1 : left;

			if (n)
				ops->feed(ud, data + pos, n);
			pos += n;
			break;
		}
		case 2: {
			uint64_t g = (kind & 0x80) ? (uint64_t)arg << 32 : arg;

			pos += g < left ? (size_t)g : left;
			ops->gap(ud, g);
			break;
		}
		default:
			ops->event(ud, kind >> 2);
			break;
		}
	}
	if (pos < size)
		ops->feed(ud, data + pos, size - pos);
}

#endif /* TT_FUZZ_SCRIPT_H */
