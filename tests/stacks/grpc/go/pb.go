// SPDX-License-Identifier: MIT

package main

// The protobuf messages of the Generate stream, by hand (../pb.py has the same fields):
// no protoc, and a codec registered as "proto" so that the wire is what generated code sends.

import (
	"errors"
	"fmt"
)

const (
	service = "sglang.grpc.scheduler.SglangScheduler"
	method  = "Generate"
	path    = "/" + service + "/" + method
)

func putVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func fieldVarint(b []byte, num int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return putVarint(putVarint(b, uint64(num)<<3), v)
}

func fieldBytes(b []byte, num int, d []byte) []byte {
	if len(d) == 0 {
		return b
	}
	b = putVarint(putVarint(b, uint64(num)<<3|2), uint64(len(d)))
	return append(b, d...)
}

func packed(num int, vals []uint64) []byte {
	var p []byte
	for _, v := range vals {
		p = putVarint(p, v)
	}
	return fieldBytes(nil, num, p)
}

// fields parses a message: field number -> values (uint64 or []byte)
func fields(b []byte) (map[int][]interface{}, error) {
	out := map[int][]interface{}{}
	rd := func() (uint64, error) {
		var v uint64
		for shift := uint(0); shift < 64; shift += 7 {
			if len(b) == 0 {
				return 0, errors.New("short varint")
			}
			c := b[0]
			b = b[1:]
			v |= uint64(c&0x7f) << shift
			if c < 0x80 {
				return v, nil
			}
		}
		return 0, errors.New("long varint")
	}
	for len(b) > 0 {
		key, err := rd()
		if err != nil {
			return nil, err
		}
		num := int(key >> 3)
		switch key & 7 {
		case 0:
			v, err := rd()
			if err != nil {
				return nil, err
			}
			out[num] = append(out[num], v)
		case 2:
			n, err := rd()
			if err != nil || n > uint64(len(b)) {
				return nil, errors.New("bad length")
			}
			out[num] = append(out[num], b[:n])
			b = b[n:]
		default:
			return nil, fmt.Errorf("wire type %d", key&7)
		}
	}
	return out, nil
}

func first(f map[int][]interface{}, num int) []byte {
	if v, ok := f[num]; ok {
		if b, ok := v[0].([]byte); ok {
			return b
		}
	}
	return nil
}

func firstInt(f map[int][]interface{}, num int) uint64 {
	if v, ok := f[num]; ok {
		if n, ok := v[0].(uint64); ok {
			return n
		}
	}
	return 0
}

type generateRequest struct {
	RequestID    string
	Text         string
	InputIDs     []uint64
	MaxNewTokens uint64
}

func (r *generateRequest) marshal() []byte {
	tok := fieldBytes(nil, 1, []byte(r.Text))
	tok = append(tok, packed(2, r.InputIDs)...)
	b := fieldBytes(nil, 1, []byte(r.RequestID))
	b = fieldBytes(b, 2, tok)
	b = fieldBytes(b, 4, fieldVarint(nil, 8, r.MaxNewTokens))
	return fieldVarint(b, 5, 1)
}

func (r *generateRequest) unmarshal(b []byte) error {
	f, err := fields(b)
	if err != nil {
		return err
	}
	r.RequestID = string(first(f, 1))
	tok, err := fields(first(f, 2))
	if err != nil {
		return err
	}
	r.Text = string(first(tok, 1))
	r.InputIDs = nil
	for p := first(tok, 2); len(p) > 0; {
		var v uint64
		var shift uint
		for len(p) > 0 {
			c := p[0]
			p = p[1:]
			v |= uint64(c&0x7f) << shift
			shift += 7
			if c < 0x80 {
				break
			}
		}
		r.InputIDs = append(r.InputIDs, v)
	}
	sp, err := fields(first(f, 4))
	if err != nil {
		return err
	}
	r.MaxNewTokens = firstInt(sp, 8)
	return nil
}

func chunkResponse(rid string, tokenID uint64, text string, prompt, completion uint64) []byte {
	c := fieldVarint(nil, 1, tokenID)
	c = fieldBytes(c, 2, []byte(text))
	c = fieldVarint(c, 3, prompt)
	c = fieldVarint(c, 4, completion)
	return fieldBytes(fieldBytes(nil, 1, []byte(rid)), 2, c)
}

func completeResponse(rid string, outputIDs []uint64, prompt, completion uint64) []byte {
	c := packed(1, outputIDs)
	c = fieldVarint(c, 3, 1) // FinishReason LENGTH
	c = fieldVarint(c, 4, prompt)
	c = fieldVarint(c, 5, completion)
	return fieldBytes(fieldBytes(nil, 1, []byte(rid)), 3, c)
}

// responseKind: "chunk", "complete" or "empty"
func responseKind(b []byte) string {
	f, err := fields(b)
	if err != nil {
		return "empty"
	}
	if _, ok := f[2]; ok {
		return "chunk"
	}
	if _, ok := f[3]; ok {
		return "complete"
	}
	return "empty"
}

// rawCodec carries messages as the bytes above; registered as "proto", grpc-go's default
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) {
	switch m := v.(type) {
	case *[]byte:
		return *m, nil
	case []byte:
		return m, nil
	}
	return nil, fmt.Errorf("rawCodec: %T", v)
}

func (rawCodec) Unmarshal(d []byte, v interface{}) error {
	m, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: %T", v)
	}
	*m = append((*m)[:0], d...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
