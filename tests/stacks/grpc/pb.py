"""The few protobuf messages of the gRPC stacks, encoded and decoded by hand (proto3 wire
format: varint keys, length-delimited strings and submessages, packed repeated ints), so no
protoc or generated code is needed. Field numbers follow SGLang's sglang_scheduler.proto
(package sglang.grpc.scheduler), the subset a token stream uses:

  GenerateRequest   1 request_id, 2 tokenized {1 original_text, 2 input_ids packed},
                    4 sampling_params {8 max_new_tokens}, 5 stream (bool)
  GenerateResponse  1 request_id, oneof 2 chunk {1 token_id, 2 text, 3 prompt_tokens,
                    4 completion_tokens}, 3 complete {1 output_ids packed, 3 finish_reason,
                    4 prompt_tokens, 5 completion_tokens}
"""

SERVICE = "sglang.grpc.scheduler.SglangScheduler"
METHOD = "Generate"
PATH = f"/{SERVICE}/{METHOD}"
FINISH_LENGTH = 1


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v) if v else b""


def field_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return varint(num << 3 | 2) + varint(len(b)) + b if b else b""


def packed(num, values):
    return field_bytes(num, b"".join(varint(v) for v in values))


def read_varint(b, i):
    """(value, next index) of the varint at b[i]."""
    shift = v = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def parse(b):
    """{field number: [values]}: ints for varints, bytes for length-delimited fields."""
    out, i = {}, 0
    while i < len(b):
        key, i = read_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, i = read_varint(b, i)
        elif wt == 2:
            n, i = read_varint(b, i)
            val = bytes(b[i:i + n])
            i += n
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            val = bytes(b[i:i + n])
            i += n
        else:
            raise ValueError(f"wire type {wt}")
        out.setdefault(num, []).append(val)
    return out


def unpack(b):
    vals, i = [], 0
    while i < len(b):
        v, i = read_varint(b, i)
        vals.append(v)
    return vals


def generate_request(request_id, text, input_ids, max_new_tokens):
    return (field_bytes(1, request_id)
            + field_bytes(2, field_bytes(1, text) + packed(2, input_ids))
            + field_bytes(4, field_varint(8, max_new_tokens))
            + field_varint(5, 1))


def parse_generate_request(b):
    f = parse(b)
    tok = parse(f.get(2, [b""])[0])
    sp = parse(f.get(4, [b""])[0])
    return {
        "request_id": f.get(1, [b""])[0].decode(),
        "text": tok.get(1, [b""])[0].decode(),
        "input_ids": unpack(tok.get(2, [b""])[0]),
        "max_new_tokens": sp.get(8, [0])[0],
    }


def chunk_response(request_id, token_id, text, prompt_tokens, completion_tokens):
    return field_bytes(1, request_id) + field_bytes(
        2, field_varint(1, token_id) + field_bytes(2, text) + field_varint(3, prompt_tokens)
        + field_varint(4, completion_tokens))


def complete_response(request_id, output_ids, prompt_tokens, completion_tokens):
    # proto3 has no presence for an all-default message: a LENGTH finish keeps it non-empty
    return field_bytes(1, request_id) + field_bytes(
        3, packed(1, output_ids) + field_varint(3, FINISH_LENGTH) + field_varint(4, prompt_tokens)
        + field_varint(5, completion_tokens))


def parse_generate_response(b):
    """('chunk', text) or ('complete', completion_tokens)."""
    f = parse(b)
    if 2 in f:
        return "chunk", parse(f[2][0]).get(2, [b""])[0].decode()
    if 3 in f:
        return "complete", parse(f[3][0]).get(5, [0])[0]
    return "empty", None
