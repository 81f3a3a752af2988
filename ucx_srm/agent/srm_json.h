/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small JSON writer into a fixed buffer, for `srmctl status --json`.
 * Commas are placed by the writer; a write past the end is dropped and
 * marks the text truncated (the caller then says so instead of sending
 * broken JSON).
 */
#ifndef SRM_JSON_H
#define SRM_JSON_H

#include <stddef.h>
#include <stdint.h>

#define SRM_JSON_MAX_DEPTH 8

typedef struct srm_json {
    char     *buf;
    size_t   size;
    size_t   len;
    int      truncated;
    unsigned depth;
    int      first[SRM_JSON_MAX_DEPTH]; /* nothing written yet at a level */
} srm_json_t;

void srm_json_init(srm_json_t *json, char *buf, size_t size);

/* KEY may be NULL inside an array (and at the top). */
void srm_json_object(srm_json_t *json, const char *key);
void srm_json_array(srm_json_t *json, const char *key);
void srm_json_end_object(srm_json_t *json);
void srm_json_end_array(srm_json_t *json);

void srm_json_uint(srm_json_t *json, const char *key, uint64_t value);
void srm_json_int(srm_json_t *json, const char *key, int64_t value);
/* Finite values only; NaN and infinities are written as null. */
void srm_json_double(srm_json_t *json, const char *key, double value);
void srm_json_bool(srm_json_t *json, const char *key, int value);
void srm_json_null(srm_json_t *json, const char *key);
/* Escaped: quotes, backslashes and control characters. */
void srm_json_string(srm_json_t *json, const char *key, const char *value);

#endif
