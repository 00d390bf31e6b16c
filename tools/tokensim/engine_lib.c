// SPDX-License-Identifier: MIT
#include "engine_lib.h"
#include "marker.h"

MARKER_FN void tse_admit(uint64_t req_num, const char *request_id)
{
	MARKER_BODY2(req_num, request_id);
}

MARKER_FN void tse_token(uint64_t req_num, const char *request_id, uint32_t index)
{
	MARKER_BODY3(req_num, request_id, index);
}

MARKER_FN void tse_done(uint64_t req_num, const char *request_id)
{
	MARKER_BODY2(req_num, request_id);
}
