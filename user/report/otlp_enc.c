// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What spans and metrics share (otlp.h): attributes, resources, the instrumentation scope,
 * the W3C traceparent, and the GenAI operation an API path names.
 */
#include <errno.h>
#include <string.h>
#include "otlp.h"
#include "otlp_proto.h"
#include "util.h"

/* ---------------------------------------------------------------- traceparent */

static int hexval(char c)
{
	/* W3C Trace Context: lower-case hex only */
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool hex_bytes(const char *s, uint8_t *out, size_t n)
{
	bool nonzero = false;

	for (size_t i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
		nonzero |= out[i] != 0;
	}
	return nonzero;
}

int otlp__traceparent(const char *s, uint8_t trace_id[16], uint8_t parent_id[8],
		      uint8_t *flags)
{
	uint8_t ver, fl;
	size_t n;

	if (!s)
		return -EINVAL;
	n = strlen(s);
	/* version-traceid-parentid-flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 */
	if (n < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-')
		return -EINVAL;
	if (hexval(s[0]) < 0 || hexval(s[1]) < 0)
		return -EINVAL;
	ver = (uint8_t)(hexval(s[0]) << 4 | hexval(s[1]));
	if (ver == 0xff)
		return -EINVAL;
	/* version 00 is exactly this long; a later one may add fields after a '-' */
	if ((ver == 0 && n != 55) || (ver && n > 55 && s[55] != '-'))
		return -EINVAL;
	if (!hex_bytes(s + 3, trace_id, 16) || !hex_bytes(s + 36, parent_id, 8))
		return -EINVAL;
	if (hexval(s[53]) < 0 || hexval(s[54]) < 0)
		return -EINVAL;
	fl = (uint8_t)(hexval(s[53]) << 4 | hexval(s[54]));
	*flags = fl;
	return 0;
}

/* ---------------------------------------------------------------- attributes */

static void kv_open(struct pbuf *b, uint32_t field, const char *key)
{
	pbuf__open(b, field);
	pbuf__str(b, KV_KEY, key, strlen(key));	/* OTEL_RESOURCE_ATTRIBUTES' are a user's */
	pbuf__open(b, KV_VALUE);
}

static void kv_close(struct pbuf *b)
{
	pbuf__close(b);
	pbuf__close(b);
}

void otlp__kv_str(struct pbuf *b, uint32_t field, const char *key, const char *v, size_t n)
{
	kv_open(b, field, key);
	pbuf__str(b, ANY_STRING, v, n);
	kv_close(b);
}

void otlp__kv_cstr(struct pbuf *b, uint32_t field, const char *key, const char *v)
{
	otlp__kv_str(b, field, key, v, strlen(v));
}

void otlp__kv_int(struct pbuf *b, uint32_t field, const char *key, int64_t v)
{
	kv_open(b, field, key);
	pbuf__int(b, ANY_INT, v);
	kv_close(b);
}

void otlp__kv_bool(struct pbuf *b, uint32_t field, const char *key, bool v)
{
	kv_open(b, field, key);
	pbuf__uint(b, ANY_BOOL, v);
	kv_close(b);
}

void otlp__kv_double(struct pbuf *b, uint32_t field, const char *key, double v)
{
	kv_open(b, field, key);
	pbuf__double(b, ANY_DOUBLE, v);
	kv_close(b);
}

/* ---------------------------------------------------------------- resource, scope */

void otlp__resource(struct pbuf *b, uint32_t field, const struct otlp_config *c,
		    const char *host, const struct otlp_proc *p)
{
	pbuf__open(b, field);
	for (int i = 0; i < c->nres_attr; i++) {
		const char *k = c->res_attr[i].key;

		/* ours win where they are known: they say which process this is */
		if (!strcmp(k, "service.name") || (p && p->pid && !strncmp(k, "process.", 8)))
			continue;
		otlp__kv_cstr(b, RESOURCE_ATTR, k, c->res_attr[i].value);
	}
	otlp__kv_cstr(b, RESOURCE_ATTR, "service.name", c->service_name);
	if (host && host[0])
		otlp__kv_cstr(b, RESOURCE_ATTR, "host.name", host);
	if (p && p->pid) {
		otlp__kv_int(b, RESOURCE_ATTR, "process.pid", p->pid);
		if (p->exe[0])
			otlp__kv_str(b, RESOURCE_ATTR, "process.executable.name", p->exe,
				     sizeof(p->exe));
		if (p->container_id[0])
			otlp__kv_str(b, RESOURCE_ATTR, "container.id", p->container_id,
				     sizeof(p->container_id));
		if (p->pod_uid[0])
			otlp__kv_str(b, RESOURCE_ATTR, "k8s.pod.uid", p->pod_uid,
				     sizeof(p->pod_uid));
	}
	pbuf__close(b);
}

void otlp__scope(struct pbuf *b, uint32_t field)
{
	pbuf__open(b, field);
	pbuf__cstr(b, ISCOPE_NAME, "tokentrace");
	pbuf__cstr(b, ISCOPE_VERSION, TT_VERSION);
	pbuf__close(b);
}

/* ---------------------------------------------------------------- GenAI operation */

static bool path_is(const char *path, size_t n, const char *want)
{
	return n == strlen(want) && !memcmp(path, want, n);
}

/* The GenAI semantic conventions' operation names, for the APIs tokentrace parses. */
const char *otlp__operation(const char *path)
{
	size_t n = path_shown_len(path, false);

	while (n > 1 && path[n - 1] == '/')
		n--;
	if (path_is(path, n, "/v1/chat/completions") || path_is(path, n, "/chat/completions") ||
	    path_is(path, n, "/v1/messages") || path_is(path, n, "/api/chat") ||
	    path_is(path, n, "/v1/responses"))
		return "chat";
	if (path_is(path, n, "/v1/completions") || path_is(path, n, "/completions") ||
	    path_is(path, n, "/completion") || path_is(path, n, "/api/generate") ||
	    path_is(path, n, "/generate") || path_is(path, n, "/generate_stream"))
		return "text_completion";
	if (path_is(path, n, "/v1/embeddings") || path_is(path, n, "/api/embed") ||
	    path_is(path, n, "/api/embeddings") || path_is(path, n, "/embeddings"))
		return "embeddings";
	return NULL;
}
