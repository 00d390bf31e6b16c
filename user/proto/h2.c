// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/2 parser (h2.h): each direction's frames (h2_frame.c) turned into stream callbacks.
 * Every header block goes through its direction's HPACK decoder whether or not its stream
 * is tracked, since the decoder's table depends on every block.
 */
#include <stdlib.h>
#include <string.h>

#include "h2_conn.h"

static void error(struct h2_parser *p, enum h2_dir dir, const char *why)
{
	p->stats.errors++;
	if (p->cb.on_error)
		p->cb.on_error(p->ud, dir, why);
}

static void side_end(struct h2_parser *p, struct h2_stream *st, enum h2_dir dir)
{
	if (st->ended[dir])
		return;
	st->ended[dir] = true;
	if (p->cb.on_end_stream)
		p->cb.on_end_stream(p->ud, &st->sud, dir, st->id);
	if (st->ended[H2_FROM_CLIENT] && st->ended[H2_FROM_SERVER])
		h2_stream__close(p, st, H2_CLOSE_DONE, dir, 0);
}

/* What a block is to its stream, from who sent it, what came before and what it holds. */
static enum h2_hdr_kind block_kind(struct h2_parser *p, struct h2_stream *st, enum h2_dir dir)
{
	const struct hpack_fields *f = &p->fields;

	if (dir == H2_FROM_CLIENT) {
		bool first = !st->seen[dir] && !st->joined;

		st->seen[dir] = true;
		if (!first)
			return H2_HDR_TRAILERS;
		/* joined: a new stream id whose block has no :method ends a stream begun before */
		if (p->joined && f->state[HPACK_METHOD] == HPACK_ABSENT) {
			st->joined = true;
			return H2_HDR_TRAILERS;
		}
		return H2_HDR_REQUEST;
	}
	if (st->seen[dir])
		return H2_HDR_TRAILERS;
	if (f->state[HPACK_STATUS] == HPACK_KNOWN && f->status >= 100 && f->status < 200)
		return H2_HDR_INFO;
	if (st->joined && f->state[HPACK_STATUS] == HPACK_ABSENT)
		return H2_HDR_TRAILERS;
	st->seen[dir] = true;
	return H2_HDR_RESPONSE;
}

static void report_headers(struct h2_parser *p, struct h2_stream *st, struct h2_headers *h)
{
	h->joined = st->joined;
	h->f = &p->fields;
	if (p->cb.on_headers)
		p->cb.on_headers(p->ud, &st->sud, h);
}

static void push_promise(struct h2_parser *p, struct h2_side *s, struct h2_headers *h)
{
	uint32_t id = s->block_promised;
	struct h2_stream *st;

	if (!id || h2__initiator(id) != H2_FROM_SERVER || h2_stream__find(p, id)) {
		error(p, H2_FROM_SERVER, "bad promised stream");
		return;
	}
	if (id > p->side[H2_FROM_SERVER].max_opened)
		p->side[H2_FROM_SERVER].max_opened = id;
	st = h2_stream__add(p, id, false);
	if (!st)
		return;
	/* reserved: the client never sends on it; its request is the promise */
	st->ended[H2_FROM_CLIENT] = true;
	st->seen[H2_FROM_CLIENT] = true;
	h->kind = H2_HDR_PUSH;
	h->stream = id;
	h->assoc = s->block_stream;
	report_headers(p, st, h);
}

/* The block of side dir is whole (or will never be): decode and report it. */
static void end_block(struct h2_parser *p, enum h2_dir dir)
{
	struct h2_side *s = &p->side[dir];
	struct h2_headers h = { .dir = dir, .stream = s->block_stream, .lost = s->block_lost };
	struct h2_stream *st;

	hpack_decoder__end(s->hpack, &p->fields);
	s->in_block = false;
	if (s->block_type == H2_PUSH_PROMISE) {
		if (dir == H2_FROM_SERVER)
			push_promise(p, s, &h);
		else
			error(p, dir, "PUSH_PROMISE from the client");
		return;
	}
	st = h2_stream__for(p, dir, s->block_stream, dir == h2__initiator(s->block_stream));
	if (!st)
		return;
	if (st->ended[dir]) {
		error(p, dir, "HEADERS after the end of its stream");
		return;
	}
	h.kind = block_kind(p, st, dir);
	h.end_stream = s->block_end_stream;
	report_headers(p, st, &h);
	if (s->block_end_stream)
		side_end(p, st, dir);
}

/* A block cut off by another frame or by lost sync: reported with its fields unknown. */
static void lose_block(struct h2_parser *p, enum h2_dir dir)
{
	struct h2_side *s = &p->side[dir];

	hpack_decoder__abandon(s->hpack);
	s->block_lost = true;
	s->block_end_stream = false;	/* not known to have ended the stream */
	end_block(p, dir);
}

static void frame_begin(void *ud, enum h2_dir dir, const struct h2_frame *f)
{
	struct h2_parser *p = ud;
	struct h2_side *s = &p->side[dir];

	p->stats.frames[f->type < H2_NTYPES ? f->type : H2_NTYPES]++;
	if (s->in_block && (f->type != H2_CONTINUATION || f->stream != s->block_stream)) {
		error(p, dir, "header block interrupted");
		lose_block(p, dir);
	}
	switch (f->type) {
	case H2_HEADERS:
	case H2_PUSH_PROMISE:
		s->in_block = true;
		s->block_lost = false;
		s->block_type = f->type;
		s->block_stream = f->stream;
		s->block_promised = f->promised;
		s->block_end_stream = f->type == H2_HEADERS && (f->flags & H2_FLAG_END_STREAM);
		hpack_decoder__begin(s->hpack);
		break;
	case H2_CONTINUATION:
		if (!s->in_block)
			error(p, dir, "CONTINUATION without a header block");
		break;
	case H2_DATA: {
		struct h2_stream *st = h2_stream__for(p, dir, f->stream, false);

		s->data_start = true;
		if (st && st->ended[dir])
			error(p, dir, "DATA after the end of its stream");
		h2_flow__data(p, dir, st, f->len);
		break;
	}
	case H2_SETTINGS:
		memset(&s->cur, 0, sizeof(s->cur));
		break;
	default:
		break;
	}
}

static void data(struct h2_parser *p, enum h2_dir dir, const struct h2_frame *f,
		 const uint8_t *b, uint64_t len)
{
	struct h2_side *s = &p->side[dir];
	struct h2_stream *st = h2_stream__find(p, f->stream);
	struct h2_data d = {
		.dir = dir, .stream = f->stream, .bytes = b, .len = (size_t)len,
		.frame_start = s->data_start,
	};

	if (!st || st->ended[dir])
		return;
	s->data_start = false;
	d.joined = st->joined;
	if (p->cb.on_data)
		p->cb.on_data(p->ud, &st->sud, &d);
}

static bool in_this_block(const struct h2_side *s, const struct h2_frame *f)
{
	return s->in_block && f->stream == s->block_stream &&
	       (f->type == s->block_type || f->type == H2_CONTINUATION);
}

static void frame_body(void *ud, enum h2_dir dir, const struct h2_frame *f, const uint8_t *b,
		       size_t len)
{
	struct h2_parser *p = ud;
	struct h2_side *s = &p->side[dir];

	if (f->type == H2_DATA)
		data(p, dir, f, b, len);
	else if (in_this_block(s, f))
		hpack_decoder__feed(s->hpack, b, len);
}

static void frame_body_gap(void *ud, enum h2_dir dir, const struct h2_frame *f, uint64_t len)
{
	struct h2_parser *p = ud;
	struct h2_side *s = &p->side[dir];

	if (f->type == H2_DATA) {
		data(p, dir, f, NULL, len);
	} else if (in_this_block(s, f) && !s->block_lost) {
		/* the block cannot be decoded, and what it inserted is unknown */
		hpack_decoder__abandon(s->hpack);
		s->block_lost = true;
	}
}

static void frame_setting(void *ud, enum h2_dir dir, uint16_t id, uint32_t value)
{
	h2_flow__setting(ud, dir, id, value);
}

static bool goaway_match(const struct h2_stream *st, uint32_t arg)
{
	/* arg: the last stream id, and the bit 31 for which side's streams it is about */
	enum h2_dir initiator = arg >> 31 ? H2_FROM_SERVER : H2_FROM_CLIENT;

	return h2__initiator(st->id) == initiator && st->id > (arg & 0x7fffffff);
}

static void goaway(struct h2_parser *p, enum h2_dir dir, const uint8_t *ctl)
{
	uint32_t last = h2__be32(ctl) & 0x7fffffff, code = h2__be32(ctl + 4);
	/* the streams it will not process are those its peer opened past last */
	enum h2_dir peer = h2__other(dir);

	if (p->cb.on_goaway)
		p->cb.on_goaway(p->ud, dir, last, code);
	h2_stream__close_all(p, goaway_match, last | (peer == H2_FROM_SERVER ? 1u << 31 : 0),
			     H2_CLOSE_GOAWAY, dir, code);
}

static void frame_end(void *ud, enum h2_dir dir, const struct h2_frame *f, const uint8_t *ctl,
		      size_t n)
{
	struct h2_parser *p = ud;
	struct h2_side *s = &p->side[dir];
	struct h2_stream *st;

	(void)n;	/* the reader checked every control frame's size */
	switch (f->type) {
	case H2_DATA:
		st = h2_stream__find(p, f->stream);
		if (st && (f->flags & H2_FLAG_END_STREAM))
			side_end(p, st, dir);	/* once: side_end() ignores a second */
		break;
	case H2_HEADERS:
	case H2_PUSH_PROMISE:
	case H2_CONTINUATION:
		if (in_this_block(s, f) && (f->flags & H2_FLAG_END_HEADERS))
			end_block(p, dir);
		break;
	case H2_RST_STREAM:
		st = h2_stream__find(p, f->stream);
		if (st)
			h2_stream__close(p, st, H2_CLOSE_RESET, dir, h2__be32(ctl));
		else
			p->stats.stray++;
		break;
	case H2_SETTINGS:
		h2_flow__settings_end(p, dir, f->flags & H2_FLAG_ACK);
		break;
	case H2_WINDOW_UPDATE:
		h2_flow__window_update(p, dir, f->stream, h2__be32(ctl) & 0x7fffffff);
		break;
	case H2_GOAWAY:
		goaway(p, dir, ctl);
		break;
	default:
		break;
	}
}

static void frame_lost(void *ud, enum h2_dir dir, const char *why)
{
	struct h2_parser *p = ud;
	struct h2_side *s = &p->side[dir];

	error(p, dir, why);
	if (s->in_block)
		lose_block(p, dir);
	/* lost frames may have held header blocks, DATA and WINDOW_UPDATEs */
	hpack_decoder__abandon(s->hpack);
	h2_flow__forget(p);
}

static const struct h2_frame_ops frame_ops = {
	.begin = frame_begin, .body = frame_body, .body_gap = frame_body_gap,
	.setting = frame_setting, .end = frame_end, .lost = frame_lost,
};

struct h2_parser *h2_parser__new(enum h2_start start, const struct h2_cb *cb, void *ud)
{
	struct h2_parser *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (cb)
		p->cb = *cb;
	p->ud = ud;
	p->joined = start == H2_START_JOINED;
	for (int d = 0; d < 2; d++) {
		h2_reader__init(&p->side[d].rd, (enum h2_dir)d, !p->joined, p->joined, &frame_ops,
				p);
		p->side[d].hpack = hpack_decoder__new(p->joined);
		if (!p->side[d].hpack) {
			h2_parser__free(p);
			return NULL;
		}
	}
	h2_flow__init(p);
	return p;
}

void h2_parser__free(struct h2_parser *p)
{
	if (!p)
		return;
	for (int d = 0; d < 2; d++)
		hpack_decoder__free(p->side[d].hpack);
	h2_stream__free_all(p);
	free(p);
}

static int b64url(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-' || c == '+')
		return 62;
	if (c == '_' || c == '/')
		return 63;
	return -1;
}

int h2_parser__upgraded(struct h2_parser *p, const char *settings)
{
	struct h2_settings_frame set = { 0 };
	uint8_t buf[6];
	unsigned bits = 0, n = 0;
	uint32_t acc = 0;
	struct h2_stream *st;

	if (!p || p->joined || p->side[H2_FROM_CLIENT].max_opened)
		return -1;
	/* base64url of a SETTINGS payload (RFC 7540 3.2.1), padding optional */
	for (const char *c = settings ? settings : ""; *c && *c != '='; c++) {
		int v = b64url(*c);

		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits < 8)
			continue;
		bits -= 8;
		buf[n++] = (uint8_t)(acc >> bits);
		if (n == 6) {
			uint16_t id = (uint16_t)(buf[0] << 8 | buf[1]);

			if (id && id < H2_SETTING_IDS) {
				set.mask |= (uint8_t)(1u << id);
				set.v[id] = h2__be32(buf + 2);
			}
			n = 0;
		}
	}
	if (n)
		return -1;
	/* the client's settings bind the server, acknowledged by the 101 itself */
	h2_flow__apply(p, H2_FROM_SERVER, &set);
	p->side[H2_FROM_CLIENT].max_opened = 1;
	st = h2_stream__add(p, 1, false);
	if (!st)
		return -1;
	st->ended[H2_FROM_CLIENT] = true;
	st->seen[H2_FROM_CLIENT] = true;
	return 0;
}

void h2_parser__feed(struct h2_parser *p, enum h2_dir dir, const uint8_t *data, size_t len)
{
	if (!p || !data || !len || (dir != H2_FROM_CLIENT && dir != H2_FROM_SERVER))
		return;
	h2_reader__feed(&p->side[dir].rd, data, len);
}

void h2_parser__gap(struct h2_parser *p, enum h2_dir dir, uint64_t len)
{
	if (!p || !len || (dir != H2_FROM_CLIENT && dir != H2_FROM_SERVER))
		return;
	h2_reader__gap(&p->side[dir].rd, len);
}

static bool any_stream(const struct h2_stream *st, uint32_t arg)
{
	(void)st;
	(void)arg;
	return true;
}

void h2_parser__eof(struct h2_parser *p)
{
	if (!p)
		return;
	for (int d = 0; d < 2; d++) {
		struct h2_side *s = &p->side[d];

		if (s->in_block) {
			hpack_decoder__abandon(s->hpack);
			s->in_block = false;
		}
		/* nothing more can come on a closed connection; whatever does is not framed */
		s->rd.st = R_LOST;
	}
	h2_stream__close_all(p, any_stream, 0, H2_CLOSE_EOF, H2_FROM_CLIENT, 0);
}

bool h2_parser__window(const struct h2_parser *p, enum h2_dir sender, uint32_t stream,
		       int64_t *window)
{
	const struct h2_stream *st;

	if (!p || (sender != H2_FROM_CLIENT && sender != H2_FROM_SERVER))
		return false;
	if (!stream) {
		*window = p->side[sender].conn_win;
		return p->side[sender].conn_known;
	}
	st = h2_stream__find(p, stream);
	if (!st || !st->win_known[sender])
		return false;
	*window = st->win[sender];
	return true;
}

void h2_parser__stats(const struct h2_parser *p, struct h2_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	*out = p->stats;
	out->dropped = p->side[0].rd.dropped + p->side[1].rd.dropped;
	out->resyncs = p->side[0].rd.resyncs + p->side[1].rd.resyncs;
}

bool h2__is_preface(const uint8_t *data, size_t len)
{
	size_t n = len < H2_PREFACE_LEN ? len : H2_PREFACE_LEN;

	return data && n && !memcmp(data, H2_PREFACE, n);
}
