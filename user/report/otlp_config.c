// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Where OTLP goes and how (otlp.h), as the OpenTelemetry SDKs read it from the environment:
 *
 *   OTEL_EXPORTER_OTLP_ENDPOINT            base URL (default http://localhost:4318), to which
 *                                          /v1/traces and /v1/metrics are added
 *   OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT   a signal's URL, used as it is
 *   OTEL_EXPORTER_OTLP_HEADERS             "name=value,..." (values percent-encoded); the
 *   OTEL_EXPORTER_OTLP_{TRACES,METRICS}_HEADERS    signal's own are added after
 *   OTEL_EXPORTER_OTLP_TIMEOUT             ms for one export (default 10000)
 *   OTEL_EXPORTER_OTLP_COMPRESSION         gzip (tokentrace's default) or none
 *   OTEL_EXPORTER_OTLP_PROTOCOL            only http/protobuf is spoken: others are refused
 *   OTEL_SERVICE_NAME                      service.name (default "tokentrace")
 *   OTEL_RESOURCE_ATTRIBUTES               "key=value,..." added to every resource
 *   OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_EXPORT_BATCH_SIZE, OTEL_BSP_MAX_QUEUE_SIZE
 *   OTEL_METRIC_EXPORT_INTERVAL
 *
 * --otlp URL replaces the endpoints (a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT). Errors say
 * which variable and why; never a header's value (headers carry API keys).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "otlp.h"
#include "util.h"

#define DEFAULT_ENDPOINT	"http://localhost:4318"

static const char *env(const char *(*get)(const char *), const char *name)
{
	const char *v = get(name);

	return v && v[0] ? v : NULL;
}

static bool url_ok(const char *u)
{
	if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
		return false;
	for (const unsigned char *p = (const unsigned char *)u; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return false;
	return true;
}

static int set_url(char *dst, const char *base, const char *suffix, const char *what,
		   char *why, size_t whysz)
{
	size_t n = strlen(base);

	if (!url_ok(base)) {
		snprintf(why, whysz, "%s: not an http:// or https:// URL", what);
		return -EINVAL;
	}
	/* a base's trailing slash is not doubled */
	if (suffix && n && base[n - 1] == '/')
		n--;
	if (snprintf(dst, OTLP_URL_MAX, "%.*s%s", (int)n, base, suffix ? suffix : "") >=
	    OTLP_URL_MAX) {
		snprintf(why, whysz, "%s: longer than %d bytes", what, OTLP_URL_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* s[0..n) percent-decoded, trimmed of spaces, into dst; false if it does not fit or holds a
 * control character (a header value with CR or LF would forge another header) */
static bool decode(char *dst, size_t sz, const char *s, size_t n)
{
	size_t o = 0;

	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%' && i + 2 < n && unhex(s[i + 1]) >= 0 && unhex(s[i + 2]) >= 0) {
			c = (unsigned char)(unhex(s[i + 1]) << 4 | unhex(s[i + 2]));
			i += 2;
		}
		if (c < ' ' || c == 0x7f || o + 1 >= sz)
			return false;
		dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return true;
}

static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ||
	       strchr("!#$%&'*+-.^_`|~", c);
}

typedef int (*pair_fn)(void *ud, const char *key, const char *value);

/* "key=value,key=value": each pair to fn; -EINVAL on a malformed one */
static int pairs(const char *s, pair_fn fn, void *ud)
{
	while (*s) {
		const char *end = strchr(s, ','), *eq;
		char key[OTLP_NAME_MAX], value[OTLP_HEADER_MAX];
		size_t n;

		n = end ? (size_t)(end - s) : strlen(s);
		eq = memchr(s, '=', n);
		if (n && (!eq || !decode(key, sizeof(key), s, eq - s) || !key[0] ||
			  !decode(value, sizeof(value), eq + 1, s + n - eq - 1) ||
			  fn(ud, key, value)))
			return -EINVAL;
		s += n + (end ? 1 : 0);
	}
	return 0;
}

static int add_header(void *ud, const char *key, const char *value)
{
	struct otlp_target *t = ud;
	int i;

	for (const char *k = key; *k; k++)
		if (!is_tchar((unsigned char)*k))
			return -EINVAL;
	/* ours: a user's would make a second one */
	if (!strcasecmp(key, "content-type") || !strcasecmp(key, "content-encoding") ||
	    !strcasecmp(key, "content-length"))
		return -EINVAL;
	for (i = 0; i < t->nheaders; i++) {	/* the signal's own replace the general one */
		size_t kl = strlen(key);

		if (!strncasecmp(t->headers[i], key, kl) && t->headers[i][kl] == ':')
			break;
	}
	if (i == OTLP_HEADERS_MAX)
		return -EINVAL;
	if (snprintf(t->headers[i], OTLP_HEADER_MAX, "%s: %s", key, value) >= OTLP_HEADER_MAX)
		return -EINVAL;
	if (i == t->nheaders)
		t->nheaders++;
	return 0;
}

static int add_res_attr(void *ud, const char *key, const char *value)
{
	struct otlp_config *c = ud;

	if (c->nres_attr == OTLP_RES_ATTR_MAX ||
	    strlcpy_cut(c->res_attr[c->nres_attr].key, sizeof(c->res_attr[0].key), key) ||
	    strlcpy_cut(c->res_attr[c->nres_attr].value, sizeof(c->res_attr[0].value), value))
		return -EINVAL;
	c->nres_attr++;
	return 0;
}

static int headers(struct otlp_target *t, const char *(*get)(const char *), const char *own,
		   char *why, size_t whysz)
{
	const char *names[2] = { "OTEL_EXPORTER_OTLP_HEADERS", own };

	for (int i = 0; i < 2; i++) {
		const char *v = env(get, names[i]);

		if (v && pairs(v, add_header, t)) {
			snprintf(why, whysz, "%s: not name=value,... with header names, values "
				 "without control characters, at most %d", names[i],
				 OTLP_HEADERS_MAX);
			return -EINVAL;
		}
	}
	return 0;
}

static int number(const char *(*get)(const char *), const char *name, uint64_t min,
		  uint64_t max, uint32_t *out, char *why, size_t whysz)
{
	const char *v = env(get, name);
	uint64_t n;

	if (!v)
		return 0;
	if (parse_uint(v, min, max, &n)) {
		char q[ARG_QUOTE_MAX];

		snprintf(why, whysz, "%s=%s: not a number from %llu to %llu", name, arg_quote(q, v),
			 (unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*out = (uint32_t)n;
	return 0;
}

static int protocol(const char *(*get)(const char *), const char *name, char *why, size_t whysz)
{
	const char *v = env(get, name);
	char q[ARG_QUOTE_MAX];

	if (!v || !strcmp(v, "http/protobuf"))
		return 0;
	snprintf(why, whysz, "%s=%s: tokentrace sends OTLP over http/protobuf only (port 4318, "
		 "not gRPC's 4317)", name, arg_quote(q, v));
	return -EINVAL;
}

static int endpoints(struct otlp_config *c, const char *url, const char *(*get)(const char *),
		     char *why, size_t whysz)
{
	const char *base = url ? url : env(get, "OTEL_EXPORTER_OTLP_ENDPOINT");
	const char *what = url ? "--otlp" : "OTEL_EXPORTER_OTLP_ENDPOINT";
	const char *tr = url ? NULL : env(get, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
	const char *me = url ? NULL : env(get, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");

	char cut[OTLP_URL_MAX];

	if (!base)
		base = DEFAULT_ENDPOINT;
	/* --otlp http://host:4318/v1/traces means the collector at http://host:4318 */
	if (url && strlen(url) < sizeof(cut)) {
		static const char *const sig[] = { "/v1/traces", "/v1/metrics" };
		size_t n = strlen(url);

		for (int i = 0; i < 2; i++) {
			size_t k = strlen(sig[i]);

			if (n > k && !strcmp(url + n - k, sig[i])) {
				snprintf(cut, sizeof(cut), "%.*s", (int)(n - k), url);
				base = cut;
			}
		}
	}
	if (tr ? set_url(c->traces.url, tr, NULL, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", why,
			 whysz) : set_url(c->traces.url, base, "/v1/traces", what, why, whysz))
		return -EINVAL;
	if (me ? set_url(c->metrics.url, me, NULL, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", why,
			 whysz) : set_url(c->metrics.url, base, "/v1/metrics", what, why, whysz))
		return -EINVAL;
	return 0;
}

int otlp_config__load(struct otlp_config *c, const char *url, const char *(*get)(const char *),
		      char *why, size_t whysz)
{
	const char *v;

	memset(c, 0, sizeof(*c));
	c->gzip = true;
	c->timeout_ms = 10000;
	c->batch_delay_ms = 5000;
	c->batch_max = 512;
	c->queue_max = 2048;
	c->metric_interval_ms = 60000;
	if (!get)
		get = (const char *(*)(const char *))getenv;
	if (endpoints(c, url, get, why, whysz) ||
	    protocol(get, "OTEL_EXPORTER_OTLP_PROTOCOL", why, whysz) ||
	    protocol(get, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", why, whysz) ||
	    protocol(get, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", why, whysz) ||
	    headers(&c->traces, get, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", why, whysz) ||
	    headers(&c->metrics, get, "OTEL_EXPORTER_OTLP_METRICS_HEADERS", why, whysz) ||
	    number(get, "OTEL_EXPORTER_OTLP_TIMEOUT", 1, 600000, &c->timeout_ms, why, whysz) ||
	    number(get, "OTEL_BSP_SCHEDULE_DELAY", 1, 3600000, &c->batch_delay_ms, why, whysz) ||
	    number(get, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1, 65536, &c->batch_max, why, whysz) ||
	    number(get, "OTEL_BSP_MAX_QUEUE_SIZE", 1, 1 << 20, &c->queue_max, why, whysz) ||
	    number(get, "OTEL_METRIC_EXPORT_INTERVAL", 1, 86400000, &c->metric_interval_ms, why,
		   whysz))
		return -EINVAL;
	if (c->batch_max > c->queue_max)
		c->batch_max = c->queue_max;
	v = env(get, "OTEL_EXPORTER_OTLP_COMPRESSION");
	if (v && strcmp(v, "gzip") && strcmp(v, "none")) {
		char q[ARG_QUOTE_MAX];

		snprintf(why, whysz, "OTEL_EXPORTER_OTLP_COMPRESSION=%s: gzip or none",
			 arg_quote(q, v));
		return -EINVAL;
	}
	if (v)
		c->gzip = !strcmp(v, "gzip");
	v = env(get, "OTEL_RESOURCE_ATTRIBUTES");
	if (v && pairs(v, add_res_attr, c)) {
		snprintf(why, whysz, "OTEL_RESOURCE_ATTRIBUTES: not key=value,... (at most %d, "
			 "without control characters)", OTLP_RES_ATTR_MAX);
		return -EINVAL;
	}
	v = env(get, "OTEL_SERVICE_NAME");
	strlcpy_cut(c->service_name, sizeof(c->service_name), v ? v : "tokentrace");
	return 0;
}

void otlp_config__url_shown(const char *url, char *buf, size_t sz)
{
	const char *s = strstr(url, "://"), *at, *end;

	if (!s) {
		esc_term(buf, sz, url, strlen(url));
		return;
	}
	s += 3;
	end = s + strcspn(s, "/?#");
	at = memchr(s, '@', end - s);
	if (!at) {
		esc_term(buf, sz, url, strlen(url));
		return;
	}
	/* scheme:// + what follows the credentials */
	{
		char tmp[OTLP_URL_MAX];

		snprintf(tmp, sizeof(tmp), "%.*s%s", (int)(s - url), url, at + 1);
		esc_term(buf, sz, tmp, strlen(tmp));
	}
}
