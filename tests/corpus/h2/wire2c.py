#!/usr/bin/env python3
"""One connection of an HTTP/2 capture as a C header of its records, for unit tests.

  wire2c.py NAME CONN > tests/unit/proto/h2_real_grpc.h
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import read_wire  # noqa: E402

name, conn = sys.argv[1:3]
recs = [r for r in read_wire(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          name + ".wire")) if r[0] == "D" and r[1] == conn]
print(f"""/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A real exchange for test_h2.c: connection {conn} of tests/corpus/h2/{name}.wire
 * (grpc-go 1.33 Generate server and client: four calls on one connection, one
 * failing with INTERNAL, one cancelled), record by record: 'c' the client sent, 's' the server.
 * Written by tests/corpus/h2/wire2c.py {name} {conn}; not to be edited by hand.
 */
#ifndef TT_H2_REAL_GRPC_H
#define TT_H2_REAL_GRPC_H

#include <stddef.h>
#include <stdint.h>

struct real_rec {{
\tchar dir;
\tsize_t len;
\tconst uint8_t *b;
}};
""")
for i, r in enumerate(recs):
    print(f"static const uint8_t real_grpc_{i}[] = {{")
    for j in range(0, len(r[4]), 12):
        print("\t" + " ".join(f"0x{b:02x}," for b in r[4][j:j + 12]))
    print("};")
print("\nstatic const struct real_rec real_grpc[] = {")
for i, r in enumerate(recs):
    print(f"\t{{ '{r[2]}', sizeof(real_grpc_{i}), real_grpc_{i} }},")
print("};\n\n#endif /* TT_H2_REAL_GRPC_H */")
