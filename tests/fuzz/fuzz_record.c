// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Recording reader fuzzer: any bytes as a recording (checksums and the layout check off, so
 * mutations reach past them, and seeds stay useful when events.h changes), every entry it
 * hands out fed to a session with the JSON and Perfetto outputs, as -r does. The reader must
 * stop with an error or at its end mark, never read out of bounds, and hand out only entries
 * within the format's limits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "session.h"
#include "outputs.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	struct session_opts so = {};
	struct output_opts oo;
	struct rec_reader *r;
	struct rec_entry e;
	struct session *s;
	struct output o;
	char err[256];
	int rc, ready = 0;

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	rc = rec_reader__open_mem(data, size, REC_NO_CRC | REC_ANY_LAYOUT, &r, err,
				  sizeof(err));
	if (rc) {
		CHECK(!r && err[0] && !strchr(err, '\n'));
		return 0;
	}
	s = session__new(&so);
	oo = (struct output_opts){ .f = devnull, .path = "/dev/null" };
	if (!output_json__new(&o, &oo))
		session__add_output(s, &o);
	if (!output_perfetto__new(&o, &oo))
		session__add_output(s, &o);
	while ((rc = rec_reader__next(r, &e)) > 0) {
		switch (e.type) {
		case REC_READY:
			CHECK(!ready++);
			CHECK(e.ready.npids >= 0 && e.ready.npids <= READY_PIDS_MAX);
			CHECK(e.ready.replay);
			session__ready(s, &e.ready);
			break;
		case REC_RECORD:
			CHECK(ready && e.size <= REC_RECORD_MAX);
			session__record(s, e.data, e.size);
			break;
		case REC_TICK:
			CHECK(ready);
			session__tick(s, e.now_ns, e.kstats, e.final);
			break;
		default:
			abort();
		}
	}
	if (rc < 0)
		CHECK(rec_reader__error(r)[0] && !strchr(rec_reader__error(r), '\n'));
	else
		CHECK(rec_reader__next(r, &e) == 0);	/* the end stays the end */
	session__flush(s);
	session__free(s);
	rec_reader__free(r);
	return 0;
}
