// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/2 frame reader (h2_frame.h). Only a frame header, the leading fields and a control
 * frame's first bytes are copied; bodies are handed on from the fed buffer.
 *
 * Resync: senders write whole frames per syscall far more often than not (nghttp2, grpc-go's
 * loopy writer and C-core's endpoint all flush frame-aligned buffers), but a send cut short
 * by a full socket buffer ends inside a frame, and a tracer that attaches sees the first
 * feed start anywhere. So every offset of the feed is tried as a frame header, and one is
 * taken only if every header of its chain that lies in the feed is plausible (strictly: a
 * known type, only its flags, its stream rule and size rule, within the length bound) and
 * the chain either ends exactly at the feed's end or holds two frames. Nine random bytes pass
 * the strict check about once in 10^6 tries, and land exactly on the feed's end once in
 * another 10^4: garbage is not taken for frames.
 */
#include <string.h>

#include "h2_frame.h"

/* flags each frame type defines (RFC 9113 6) */
static const uint8_t known_flags[H2_NTYPES] = {
	[H2_DATA] = H2_FLAG_END_STREAM | H2_FLAG_PADDED,
	[H2_HEADERS] = H2_FLAG_END_STREAM | H2_FLAG_END_HEADERS | H2_FLAG_PADDED |
		       H2_FLAG_PRIORITY,
	[H2_SETTINGS] = H2_FLAG_ACK,
	[H2_PUSH_PROMISE] = H2_FLAG_END_HEADERS | H2_FLAG_PADDED,
	[H2_PING] = H2_FLAG_ACK,
	[H2_CONTINUATION] = H2_FLAG_END_HEADERS,
};

void h2__parse_header(const uint8_t *b, struct h2_frame *f)
{
	memset(f, 0, sizeof(*f));
	f->len = (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
	f->type = b[3];
	f->flags = b[4];
	f->stream = h2__be32(b + 5) & 0x7fffffff;	/* the reserved bit is ignored */
}

const char *h2__check_header(const struct h2_frame *f, uint32_t max_len, bool strict)
{
	bool on_stream = f->stream != 0;

	if (f->len > max_len)
		return "frame longer than the peer allows";
	switch (f->type) {
	case H2_DATA:
	case H2_HEADERS:
	case H2_CONTINUATION:
		if (!on_stream)
			return "stream frame on stream 0";
		break;
	case H2_PRIORITY:
		if (!on_stream || f->len != 5)
			return "bad PRIORITY";
		break;
	case H2_RST_STREAM:
		if (!on_stream || f->len != 4)
			return "bad RST_STREAM";
		break;
	case H2_SETTINGS:
		if (on_stream || f->len % 6 || ((f->flags & H2_FLAG_ACK) && f->len))
			return "bad SETTINGS";
		break;
	case H2_PUSH_PROMISE:
		if (!on_stream || f->len < 4)
			return "bad PUSH_PROMISE";
		break;
	case H2_PING:
		if (on_stream || f->len != 8)
			return "bad PING";
		break;
	case H2_GOAWAY:
		if (on_stream || f->len < 8)
			return "bad GOAWAY";
		break;
	case H2_WINDOW_UPDATE:
		if (f->len != 4)
			return "bad WINDOW_UPDATE";
		break;
	default:
		/* extensions (ALTSVC, ORIGIN, PRIORITY_UPDATE) are skipped, but not resynced on */
		return strict ? "unknown frame type" : NULL;
	}
	if (strict && (f->flags & ~known_flags[f->type]))
		return "unknown flags";
	return NULL;
}

void h2_reader__init(struct h2_reader *r, enum h2_dir dir, bool preface, bool joined,
		     const struct h2_frame_ops *ops, void *ud)
{
	memset(r, 0, sizeof(*r));
	r->dir = dir;
	r->ops = ops;
	r->ud = ud;
	r->max_len = H2_DEFAULT_FRAME_MAX;
	if (joined)
		r->st = R_LOST;
	else if (preface && dir == H2_FROM_CLIENT)
		r->st = R_PREFACE;
	else
		r->st = R_HEAD;
}

bool h2_reader__idle(const struct h2_reader *r)
{
	return r->st == R_HEAD && r->n == 0;
}

static void lose(struct h2_reader *r, const char *why)
{
	r->st = R_LOST;
	r->n = 0;
	r->ops->lost(r->ud, r->dir, why);
}

static void end_frame(struct h2_reader *r)
{
	r->st = R_HEAD;
	r->n = 0;
	r->ops->end(r->ud, r->dir, &r->f, r->ctl, r->nctl);
}

/* The leading fields are in: padding, promised stream, body length known. */
static void finish_lead(struct h2_reader *r)
{
	struct h2_frame *f = &r->f;
	bool padded = (f->flags & H2_FLAG_PADDED) &&
		      (f->type == H2_DATA || f->type == H2_HEADERS || f->type == H2_PUSH_PROMISE);

	f->pad = padded ? r->lead[0] : 0;
	if (f->type == H2_PUSH_PROMISE)
		f->promised = h2__be32(r->lead + padded) & 0x7fffffff;
	if (r->lead_len + f->pad > f->len) {
		lose(r, "padding longer than its frame");
		return;
	}
	f->body_len = f->len - r->lead_len - f->pad;
	r->st = R_PAYLOAD;
	r->off = 0;
	r->ops->begin(r->ud, r->dir, f);
	if (r->st == R_PAYLOAD && f->body_len + f->pad == 0)
		end_frame(r);
}

static void start_frame(struct h2_reader *r)
{
	struct h2_frame *f = &r->f;
	const char *why;

	h2__parse_header(r->hdr, f);
	why = h2__check_header(f, r->max_len, false);
	if (why) {
		lose(r, why);
		return;
	}
	r->nctl = 0;
	r->nset = 0;
	r->lead_len = 0;
	if ((f->flags & H2_FLAG_PADDED) &&
	    (f->type == H2_DATA || f->type == H2_HEADERS || f->type == H2_PUSH_PROMISE))
		r->lead_len++;
	if (f->type == H2_HEADERS && (f->flags & H2_FLAG_PRIORITY))
		r->lead_len += 5;
	if (f->type == H2_PUSH_PROMISE)
		r->lead_len += 4;
	if (r->lead_len > f->len) {
		lose(r, "frame shorter than its fields");
		return;
	}
	r->n = 0;
	if (r->lead_len) {
		r->st = R_LEAD;
		return;
	}
	finish_lead(r);
}

static void settings_bytes(struct h2_reader *r, const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		r->set[r->nset++] = b[i];
		if (r->nset == 6) {
			r->nset = 0;
			r->ops->setting(r->ud, r->dir, (uint16_t)(r->set[0] << 8 | r->set[1]),
					h2__be32(r->set + 2));
		}
	}
}

static bool carries_block_or_data(uint8_t type)
{
	return type == H2_DATA || type == H2_HEADERS || type == H2_PUSH_PROMISE ||
	       type == H2_CONTINUATION;
}

static void body_bytes(struct h2_reader *r, const uint8_t *b, size_t len)
{
	size_t n;

	if (carries_block_or_data(r->f.type)) {
		r->ops->body(r->ud, r->dir, &r->f, b, len);
	} else if (r->f.type == H2_SETTINGS) {
		settings_bytes(r, b, len);
	} else if (r->f.type < H2_NTYPES) {
		n = H2_CTL_MAX - r->nctl < len ? H2_CTL_MAX - r->nctl : len;
		memcpy(r->ctl + r->nctl, b, n);
		r->nctl += (unsigned)n;
	}
}

/* Payload bytes from d: returns how many belong to the frame. */
static size_t payload(struct h2_reader *r, const uint8_t *d, size_t len)
{
	uint32_t total = r->f.body_len + r->f.pad;
	size_t take = total - r->off < len ? total - r->off : len;

	if (r->off < r->f.body_len) {
		size_t b = r->f.body_len - r->off < take ? r->f.body_len - r->off : take;

		body_bytes(r, d, b);
		if (r->st != R_PAYLOAD)
			return len;
	}
	r->off += (uint32_t)take;
	if (r->off == total)
		end_frame(r);
	return take;
}

/* Could a chain of frames start at b? See the top of the file. */
static bool chain_ok(const struct h2_reader *r, const uint8_t *b, size_t n)
{
	size_t pos = 0;
	unsigned frames = 0;

	while (pos + H2_FRAME_HEADER_LEN <= n) {
		struct h2_frame f;

		if (b[pos + 5] & 0x80)
			return false;	/* the reserved bit: never set by a real stack */
		h2__parse_header(b + pos, &f);
		if (h2__check_header(&f, r->max_len, true))
			return false;
		frames++;
		pos += H2_FRAME_HEADER_LEN + f.len;
	}
	return (frames && pos == n) || frames >= 2;
}

/* Out of sync at d[i]: returns where parsing resumes (len: the whole rest dropped). */
static size_t resync(struct h2_reader *r, const uint8_t *d, size_t len, size_t i)
{
	for (size_t j = i; j < len; j++) {
		size_t skip = 0;

		/* a connection that turns out new after all */
		if (r->dir == H2_FROM_CLIENT && len - j >= H2_PREFACE_LEN &&
		    !memcmp(d + j, H2_PREFACE, H2_PREFACE_LEN))
			skip = H2_PREFACE_LEN;
		else if (!chain_ok(r, d + j, len - j))
			continue;
		r->dropped += j - i;
		r->resyncs++;
		r->st = R_HEAD;
		r->n = 0;
		return j + skip;
	}
	r->dropped += len - i;
	return len;
}

void h2_reader__feed(struct h2_reader *r, const uint8_t *d, size_t len)
{
	size_t i = 0, n;

	while (i < len) {
		switch (r->st) {
		case R_PREFACE:
			if (d[i] != (uint8_t)H2_PREFACE[r->n]) {
				lose(r, "no connection preface");
				break;
			}
			i++;
			if (++r->n == H2_PREFACE_LEN) {
				r->st = R_HEAD;
				r->n = 0;
			}
			break;
		case R_HEAD:
			n = H2_FRAME_HEADER_LEN - r->n < len - i ? H2_FRAME_HEADER_LEN - r->n
								  : len - i;
			memcpy(r->hdr + r->n, d + i, n);
			r->n += (unsigned)n;
			i += n;
			if (r->n == H2_FRAME_HEADER_LEN)
				start_frame(r);
			break;
		case R_LEAD:
			n = r->lead_len - r->n < len - i ? r->lead_len - r->n : len - i;
			memcpy(r->lead + r->n, d + i, n);
			r->n += (unsigned)n;
			i += n;
			if (r->n == r->lead_len)
				finish_lead(r);
			break;
		case R_PAYLOAD:
			i += payload(r, d + i, len - i);
			break;
		case R_LOST:
			i = resync(r, d, len, i);
			break;
		}
	}
}

void h2_reader__gap(struct h2_reader *r, uint64_t len)
{
	uint64_t total, take;

	if (!len)
		return;
	if (r->st != R_PAYLOAD) {
		if (r->st != R_LOST)
			lose(r, "gap where a frame header was");
		r->dropped += len;
		return;
	}
	total = r->f.body_len + r->f.pad;
	take = total - r->off < len ? total - r->off : len;
	if (r->off < r->f.body_len) {
		uint64_t b = r->f.body_len - r->off < take ? r->f.body_len - r->off : take;

		if (carries_block_or_data(r->f.type)) {
			r->ops->body_gap(r->ud, r->dir, &r->f, b);
		} else if (r->f.type < H2_NTYPES) {
			/* a setting or a window increment the parser will never know */
			lose(r, "gap in a control frame");
			r->dropped += len;
			return;
		}
	}
	r->off += (uint32_t)take;
	len -= take;
	if (r->off == total)
		end_frame(r);
	if (len) {
		lose(r, "gap across frames");
		r->dropped += len;
	}
}
