// SPDX-License-Identifier: MIT
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define JSON_MAX_DEPTH 64

struct jp {
	const char *s;
	size_t n;
	size_t i;
};

static void skip_ws(struct jp *p)
{
	while (p->i < p->n) {
		char c = p->s[p->i];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->i++;
	}
}

static bool lit(struct jp *p, const char *w)
{
	size_t l = strlen(w);

	if (p->n - p->i < l || memcmp(p->s + p->i, w, l))
		return false;
	p->i += l;
	return true;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* At the opening quote: moves past the closing one; *b,*l = raw content. */
static bool scan_string(struct jp *p, const char **b, size_t *l)
{
	size_t start;

	if (p->i >= p->n || p->s[p->i] != '"')
		return false;
	start = ++p->i;
	while (p->i < p->n) {
		unsigned char c = (unsigned char)p->s[p->i];

		if (c == '"') {
			*b = p->s + start;
			*l = p->i - start;
			p->i++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\') {
			if (++p->i >= p->n)
				return false;
			c = (unsigned char)p->s[p->i];
			if (c == 'u') {
				if (p->n - p->i < 5)
					return false;
				for (int k = 1; k <= 4; k++)
					if (!is_hex(p->s[p->i + k]))
						return false;
				p->i += 4;
			} else if (!strchr("\"\\/bfnrt", c) || !c) {
				return false;
			}
		}
		p->i++;
	}
	return false;
}

static bool scan_number(struct jp *p)
{
	size_t d;

	if (p->i < p->n && p->s[p->i] == '-')
		p->i++;
	if (p->i >= p->n)
		return false;
	if (p->s[p->i] == '0') {
		p->i++;
	} else {
		for (d = 0; p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9'; d++)
			p->i++;
		if (!d)
			return false;
	}
	if (p->i < p->n && p->s[p->i] == '.') {
		p->i++;
		for (d = 0; p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9'; d++)
			p->i++;
		if (!d)
			return false;
	}
	if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
		p->i++;
		if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
			p->i++;
		for (d = 0; p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9'; d++)
			p->i++;
		if (!d)
			return false;
	}
	return true;
}

/* Validates and skips one value starting at p->i (whitespace already skipped). */
static bool skip_value(struct jp *p, int depth, struct json_val *v)
{
	size_t start = p->i;
	const char *b;
	size_t l;
	char c;

	if (depth > JSON_MAX_DEPTH || p->i >= p->n)
		return false;
	c = p->s[p->i];
	switch (c) {
	case '"':
		if (!scan_string(p, &b, &l))
			return false;
		if (v) {
			v->type = JSON_STR;
			v->p = b;
			v->n = l;
		}
		return true;
	case '{':
	case '[':
		p->i++;
		skip_ws(p);
		if (p->i < p->n && p->s[p->i] == (c == '{' ? '}' : ']')) {
			p->i++;
		} else {
			for (;;) {
				if (c == '{') {
					if (!scan_string(p, &b, &l))
						return false;
					skip_ws(p);
					if (p->i >= p->n || p->s[p->i] != ':')
						return false;
					p->i++;
					skip_ws(p);
				}
				if (!skip_value(p, depth + 1, NULL))
					return false;
				skip_ws(p);
				if (p->i >= p->n)
					return false;
				if (p->s[p->i] == ',') {
					p->i++;
					skip_ws(p);
					continue;
				}
				if (p->s[p->i] != (c == '{' ? '}' : ']'))
					return false;
				p->i++;
				break;
			}
		}
		if (v) {
			v->type = c == '{' ? JSON_OBJ : JSON_ARR;
			v->p = p->s + start;
			v->n = p->i - start;
		}
		return true;
	case 't':
	case 'f':
		if (!lit(p, c == 't' ? "true" : "false"))
			return false;
		if (v) {
			v->type = JSON_BOOL;
			v->p = p->s + start;
			v->n = p->i - start;
		}
		return true;
	case 'n':
		if (!lit(p, "null"))
			return false;
		if (v) {
			v->type = JSON_NULL;
			v->p = p->s + start;
			v->n = 4;
		}
		return true;
	default:
		if (c != '-' && (c < '0' || c > '9'))
			return false;
		if (!scan_number(p))
			return false;
		if (v) {
			v->type = JSON_NUM;
			v->p = p->s + start;
			v->n = p->i - start;
		}
		return true;
	}
}

bool json_valid(const char *s, size_t n)
{
	struct jp p = { s, n, 0 };

	skip_ws(&p);
	if (!skip_value(&p, 0, NULL))
		return false;
	skip_ws(&p);
	return p.i == p.n;
}

/* Positions p at the value of member key (length kl) of the object at p->i. */
static bool find_member(struct jp *p, const char *key, size_t kl)
{
	const char *b;
	size_t l;

	if (p->i >= p->n || p->s[p->i] != '{')
		return false;
	p->i++;
	skip_ws(p);
	if (p->i < p->n && p->s[p->i] == '}')
		return false;
	for (;;) {
		if (!scan_string(p, &b, &l))
			return false;
		skip_ws(p);
		if (p->i >= p->n || p->s[p->i] != ':')
			return false;
		p->i++;
		skip_ws(p);
		/* Keys we look up are plain ASCII: compare the raw bytes. */
		if (l == kl && !memcmp(b, key, kl))
			return true;
		if (!skip_value(p, 1, NULL))
			return false;
		skip_ws(p);
		if (p->i >= p->n || p->s[p->i] != ',')
			return false;
		p->i++;
		skip_ws(p);
	}
}

static bool find_element(struct jp *p, unsigned long idx)
{
	if (p->i >= p->n || p->s[p->i] != '[')
		return false;
	p->i++;
	skip_ws(p);
	if (p->i < p->n && p->s[p->i] == ']')
		return false;
	for (unsigned long k = 0;; k++) {
		if (k == idx)
			return true;
		if (!skip_value(p, 1, NULL))
			return false;
		skip_ws(p);
		if (p->i >= p->n || p->s[p->i] != ',')
			return false;
		p->i++;
		skip_ws(p);
	}
}

bool json_get(const char *s, size_t n, const char *path, struct json_val *out)
{
	struct jp p = { s, n, 0 };
	const char *c = path;

	skip_ws(&p);
	while (*c) {
		const char *e = strchr(c, '.');
		size_t kl = e ? (size_t)(e - c) : strlen(c);
		bool ok;

		if (p.i < p.n && p.s[p.i] == '[') {
			char *end;
			unsigned long idx = strtoul(c, &end, 10);

			ok = end == c + kl && kl && find_element(&p, idx);
		} else {
			ok = find_member(&p, c, kl);
		}
		if (!ok)
			return false;
		c += kl;
		if (*c == '.')
			c++;
	}
	return skip_value(&p, 0, out);
}

bool json_get_bool(const char *s, size_t n, const char *path, bool *out)
{
	struct json_val v;

	if (!json_get(s, n, path, &v) || v.type != JSON_BOOL)
		return false;
	*out = v.p[0] == 't';
	return true;
}

bool json_get_int(const char *s, size_t n, const char *path, long long *out)
{
	struct json_val v;
	char tmp[32];
	char *end;

	if (!json_get(s, n, path, &v) || v.type != JSON_NUM || v.n >= sizeof(tmp))
		return false;
	memcpy(tmp, v.p, v.n);
	tmp[v.n] = '\0';
	*out = strtoll(tmp, &end, 10);
	return *end == '\0';
}

bool json_get_str(const char *s, size_t n, const char *path, struct json_val *out)
{
	return json_get(s, n, path, out) && out->type == JSON_STR;
}

static unsigned hex4(const char *h)
{
	unsigned v = 0;

	for (int k = 0; k < 4; k++) {
		char c = h[k];

		v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	return v;
}

static size_t put(char *out, size_t outsz, size_t o, char c)
{
	if (o + 1 < outsz)
		out[o] = c;
	return o + 1;
}

size_t json_unescape(const struct json_val *v, char *out, size_t outsz)
{
	size_t o = 0;

	for (size_t i = 0; i < v->n; i++) {
		char c = v->p[i];
		uint32_t cp;

		if (c != '\\' || i + 1 >= v->n) {
			o = put(out, outsz, o, c);
			continue;
		}
		c = v->p[++i];
		switch (c) {
		case 'b': o = put(out, outsz, o, '\b'); continue;
		case 'f': o = put(out, outsz, o, '\f'); continue;
		case 'n': o = put(out, outsz, o, '\n'); continue;
		case 'r': o = put(out, outsz, o, '\r'); continue;
		case 't': o = put(out, outsz, o, '\t'); continue;
		case 'u': break;
		default: o = put(out, outsz, o, c); continue;
		}
		if (i + 4 >= v->n)
			break;
		cp = hex4(v->p + i + 1);
		i += 4;
		/* A high surrogate followed by \uDCxx is one code point. */
		if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < v->n && v->p[i + 1] == '\\' &&
		    v->p[i + 2] == 'u') {
			uint32_t lo = hex4(v->p + i + 3);

			if (lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				i += 6;
			}
		}
		if (cp >= 0xd800 && cp < 0xe000)
			cp = 0xfffd;
		if (cp < 0x80) {
			o = put(out, outsz, o, (char)cp);
		} else if (cp < 0x800) {
			o = put(out, outsz, o, (char)(0xc0 | cp >> 6));
			o = put(out, outsz, o, (char)(0x80 | (cp & 0x3f)));
		} else if (cp < 0x10000) {
			o = put(out, outsz, o, (char)(0xe0 | cp >> 12));
			o = put(out, outsz, o, (char)(0x80 | ((cp >> 6) & 0x3f)));
			o = put(out, outsz, o, (char)(0x80 | (cp & 0x3f)));
		} else {
			o = put(out, outsz, o, (char)(0xf0 | cp >> 18));
			o = put(out, outsz, o, (char)(0x80 | ((cp >> 12) & 0x3f)));
			o = put(out, outsz, o, (char)(0x80 | ((cp >> 6) & 0x3f)));
			o = put(out, outsz, o, (char)(0x80 | (cp & 0x3f)));
		}
	}
	if (outsz)
		out[o < outsz ? o : outsz - 1] = '\0';
	return o;
}
