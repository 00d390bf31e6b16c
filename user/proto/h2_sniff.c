// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/2 seen from the middle (h2.h): a capture that begins on a connection already open.
 * Nothing of it says "HTTP/2" the way a preface does; a chain of frame headers that holds
 * together does (h2_frame.c's strict resync check: a known type, its flags, its stream and
 * size rules, within SETTINGS_MAX_FRAME_SIZE's default), and a header block's first field
 * says which side wrote it: requests lead with :method, :scheme, :path or :authority,
 * responses with :status (RFC 9113 8.3: pseudo-headers come first), and encoders send those
 * as static-table references.
 */
#include <string.h>

#include "h2_frame.h"

bool h2__is_settings(const uint8_t *data, size_t len)
{
	struct h2_frame f;

	if (!data || len < H2_FRAME_HEADER_LEN)
		return false;
	h2__parse_header(data, &f);
	return f.type == H2_SETTINGS && !f.flags && !(data[5] & 0x80) &&
	       !h2__check_header(&f, H2_DEFAULT_FRAME_MAX, true);
}

/* A static table index's side: 1..7 a request's pseudo-header, 8..14 :status (RFC 7541 A). */
static enum h2_sender by_index(unsigned idx)
{
	if (idx >= 1 && idx <= 7)
		return H2_SENDER_CLIENT;
	if (idx >= 8 && idx <= 14)
		return H2_SENDER_SERVER;
	return H2_SENDER_UNKNOWN;
}

/* The first field of a header block fragment b[0..n): whose is it? */
static enum h2_sender block_sender(const uint8_t *b, size_t n)
{
	size_t i = 0;

	/* dynamic table size updates (001xxxxx, maybe continued) come before any field */
	while (i < n && (b[i] & 0xe0) == 0x20) {
		if ((b[i++] & 0x1f) != 0x1f)
			continue;
		while (i < n && (b[i] & 0x80))
			i++;
		i++;
	}
	if (i >= n)
		return H2_SENDER_UNKNOWN;
	if (b[i] & 0x80)			/* indexed field */
		return by_index(b[i] & 0x7f);
	if ((b[i] & 0xc0) == 0x40)		/* literal, indexed name, incremental indexing */
		return by_index(b[i] & 0x3f);
	if ((b[i] & 0xe0) == 0)			/* literal without or never indexed */
		return by_index(b[i] & 0x0f);
	return H2_SENDER_UNKNOWN;
}

/* What frame f (its payload b[0..n), as far as captured) says about its sender. */
static enum h2_sender frame_sender(const struct h2_frame *f, const uint8_t *b, size_t n)
{
	size_t lead = 0;

	if (f->type == H2_PUSH_PROMISE)
		return H2_SENDER_SERVER;
	if (f->type != H2_HEADERS)
		return H2_SENDER_UNKNOWN;
	if (f->flags & H2_FLAG_PADDED)
		lead++;
	if (f->flags & H2_FLAG_PRIORITY)
		lead += 5;
	if (lead >= n || lead >= f->len)
		return H2_SENDER_UNKNOWN;
	return block_sender(b + lead, n - lead);
}

bool h2__sniff(const uint8_t *data, size_t len, enum h2_sender *sender)
{
	size_t pos = 0;
	unsigned frames = 0;

	*sender = H2_SENDER_UNKNOWN;
	if (!data)
		return false;
	while (pos + H2_FRAME_HEADER_LEN <= len) {
		struct h2_frame f;
		size_t body = pos + H2_FRAME_HEADER_LEN;

		if (data[pos + 5] & 0x80)
			break;
		h2__parse_header(data + pos, &f);
		if (h2__check_header(&f, H2_DEFAULT_FRAME_MAX, true))
			break;
		if (*sender == H2_SENDER_UNKNOWN)
			*sender = frame_sender(&f, data + body, len - body < f.len ? len - body : f.len);
		frames++;
		pos = body + f.len;
	}
	if (pos + H2_FRAME_HEADER_LEN > len && ((frames && pos == len) || frames >= 2))
		return true;
	*sender = H2_SENDER_UNKNOWN;
	return false;
}
