// SPDX-License-Identifier: MIT
#include <sys/sdt.h>

#include "engine_lib.h"
#include "marker.h"
#include "markers.h"

MARKER_FN void tokensim_admit(uint64_t req_num, const char *request_id)
{
	MARKER_BODY2(req_num, request_id);
}

MARKER_FN void tokensim_token(uint64_t req_num, const char *request_id, uint32_t index)
{
	MARKER_BODY3(req_num, request_id, index);
}

MARKER_FN void tokensim_done(uint64_t req_num, const char *request_id)
{
	MARKER_BODY2(req_num, request_id);
}

void markers_admit(uint64_t req_num, const char *request_id)
{
	STAP_PROBE2(tokensim, admit, req_num, request_id);
	tokensim_admit(req_num, request_id);
	tse_admit(req_num, request_id);
}

void markers_token(uint64_t req_num, const char *request_id, uint32_t index)
{
	STAP_PROBE3(tokensim, token, req_num, request_id, index);
	tokensim_token(req_num, request_id, index);
	tse_token(req_num, request_id, index);
}

void markers_done(uint64_t req_num, const char *request_id)
{
	STAP_PROBE2(tokensim, done, req_num, request_id);
	tokensim_done(req_num, request_id);
	tse_done(req_num, request_id);
}
