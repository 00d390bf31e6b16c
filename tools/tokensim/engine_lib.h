/* SPDX-License-Identifier: MIT */
/*
 * libtsengine.so: the engine markers as exported functions of a shared
 * library, so tokentrace's uprobes can be tested on a library path too.
 */
#ifndef TS_ENGINE_LIB_H
#define TS_ENGINE_LIB_H

#include <stdint.h>

void tse_admit(uint64_t req_num, const char *request_id);
void tse_token(uint64_t req_num, const char *request_id, uint32_t index);
void tse_done(uint64_t req_num, const char *request_id);

#endif
