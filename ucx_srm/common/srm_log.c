/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_log.h"

#include <stdarg.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char      *srm_log_program = "srm";
static srm_log_level_t srm_log_level    = SRM_LOG_INFO;
static FILE            *srm_log_stream  = NULL;

static const char *srm_log_level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void srm_log_init(const char *program, srm_log_level_t level, FILE *stream)
{
    srm_log_program = program;
    srm_log_level   = level;
    srm_log_stream  = stream;
}

void srm_log_set_level(srm_log_level_t level)
{
    srm_log_level = level;
}

int srm_log_enabled(srm_log_level_t level)
{
    return level <= srm_log_level;
}

void srm_log(srm_log_level_t level, const char *fmt, ...)
{
    FILE *stream = (srm_log_stream != NULL) ? srm_log_stream : stderr;
    struct timeval tv;
    struct tm tm;
    va_list ap;

    if (!srm_log_enabled(level)) {
        return;
    }
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    fprintf(stream, "[%02d:%02d:%02d.%06ld] %s[%d] %s: ", tm.tm_hour,
            tm.tm_min, tm.tm_sec, (long)tv.tv_usec, srm_log_program,
            (int)getpid(), srm_log_level_names[level]);
    va_start(ap, fmt);
    vfprintf(stream, fmt, ap);
    va_end(ap);
    fputc('\n', stream);
    fflush(stream);
}
