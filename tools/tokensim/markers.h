/* SPDX-License-Identifier: MIT */
/*
 * Engine markers, three kinds fired together by the engine thread with the
 * same arguments: USDT probes tokensim:{admit,token,done}, the executable's
 * functions tokensim_{admit,token,done}, and libtsengine.so's tse_*.
 */
#ifndef TS_MARKERS_H
#define TS_MARKERS_H

#include <stdint.h>

void tokensim_admit(uint64_t req_num, const char *request_id);
void tokensim_token(uint64_t req_num, const char *request_id, uint32_t index);
void tokensim_done(uint64_t req_num, const char *request_id);

void markers_admit(uint64_t req_num, const char *request_id);
void markers_token(uint64_t req_num, const char *request_id, uint32_t index);
void markers_done(uint64_t req_num, const char *request_id);

#endif
