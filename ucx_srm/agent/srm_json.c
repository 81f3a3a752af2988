/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static void srm_json_raw(srm_json_t *json, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void srm_json_raw(srm_json_t *json, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (json->truncated) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(json->buf + json->len, json->size - json->len, fmt, ap);
    va_end(ap);
    if ((n < 0) || ((size_t)n >= json->size - json->len)) {
        json->truncated = 1;
        json->buf[json->len] = '\0';
        return;
    }
    json->len += (size_t)n;
}

static void srm_json_escaped(srm_json_t *json, const char *text)
{
    const unsigned char *c;

    srm_json_raw(json, "\"");
    for (c = (const unsigned char*)text; *c != '\0'; ++c) {
        if ((*c == '"') || (*c == '\\')) {
            srm_json_raw(json, "\\%c", *c);
        } else if (*c < 0x20) {
            srm_json_raw(json, "\\u%04x", *c);
        } else {
            srm_json_raw(json, "%c", *c);
        }
    }
    srm_json_raw(json, "\"");
}

/* The comma before a value, and its key. */
static void srm_json_key(srm_json_t *json, const char *key)
{
    if (!json->first[json->depth]) {
        srm_json_raw(json, ",");
    }
    json->first[json->depth] = 0;
    if (key != NULL) {
        srm_json_escaped(json, key);
        srm_json_raw(json, ":");
    }
}

void srm_json_init(srm_json_t *json, char *buf, size_t size)
{
    json->buf       = buf;
    json->size      = size;
    json->len       = 0;
    json->truncated = (size == 0);
    json->depth     = 0;
    json->first[0]  = 1;
    if (size > 0) {
        buf[0] = '\0';
    }
}

static void srm_json_open(srm_json_t *json, const char *key, char bracket)
{
    srm_json_key(json, key);
    srm_json_raw(json, "%c", bracket);
    if (json->depth + 1 >= SRM_JSON_MAX_DEPTH) {
        json->truncated = 1; /* a bug of the caller: no broken text out */
        return;
    }
    json->first[++json->depth] = 1;
}

static void srm_json_close(srm_json_t *json, char bracket)
{
    if (json->depth > 0) {
        --json->depth;
    }
    srm_json_raw(json, "%c", bracket);
}

void srm_json_object(srm_json_t *json, const char *key)
{
    srm_json_open(json, key, '{');
}

void srm_json_array(srm_json_t *json, const char *key)
{
    srm_json_open(json, key, '[');
}

void srm_json_end_object(srm_json_t *json)
{
    srm_json_close(json, '}');
}

void srm_json_end_array(srm_json_t *json)
{
    srm_json_close(json, ']');
}

void srm_json_uint(srm_json_t *json, const char *key, uint64_t value)
{
    srm_json_key(json, key);
    srm_json_raw(json, "%" PRIu64, value);
}

void srm_json_int(srm_json_t *json, const char *key, int64_t value)
{
    srm_json_key(json, key);
    srm_json_raw(json, "%" PRId64, value);
}

void srm_json_double(srm_json_t *json, const char *key, double value)
{
    srm_json_key(json, key);
    if (isfinite(value)) {
        srm_json_raw(json, "%.6g", value);
    } else {
        srm_json_raw(json, "null");
    }
}

void srm_json_bool(srm_json_t *json, const char *key, int value)
{
    srm_json_key(json, key);
    srm_json_raw(json, "%s", value ? "true" : "false");
}

void srm_json_null(srm_json_t *json, const char *key)
{
    srm_json_key(json, key);
    srm_json_raw(json, "null");
}

void srm_json_string(srm_json_t *json, const char *key, const char *value)
{
    srm_json_key(json, key);
    srm_json_escaped(json, value);
}
