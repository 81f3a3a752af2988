/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Logging for srmd and the tools (the module logs through UCX's ucs_log).
 * One line per event: time, program, pid, level, message.
 */
#ifndef SRM_LOG_H
#define SRM_LOG_H

#include <stdio.h>

typedef enum {
    SRM_LOG_ERROR,
    SRM_LOG_WARN,
    SRM_LOG_INFO,
    SRM_LOG_DEBUG,
} srm_log_level_t;

void srm_log_init(const char *program, srm_log_level_t level, FILE *stream);
void srm_log_set_level(srm_log_level_t level);
int srm_log_enabled(srm_log_level_t level);
void srm_log(srm_log_level_t level, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

#define srm_error(...) srm_log(SRM_LOG_ERROR, __VA_ARGS__)
#define srm_warn(...)  srm_log(SRM_LOG_WARN, __VA_ARGS__)
#define srm_info(...)  srm_log(SRM_LOG_INFO, __VA_ARGS__)
#define srm_debug(...) \
    do { \
        if (srm_log_enabled(SRM_LOG_DEBUG)) { \
            srm_log(SRM_LOG_DEBUG, __VA_ARGS__); \
        } \
    } while (0)

#endif
