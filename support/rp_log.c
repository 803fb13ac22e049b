#include "rp_log.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

rp_log_level rp_log_min_level = RP_LOG_INFO;
static rp_log_format rp_log_fmt = RP_LOG_FORMAT_JSON;

static const char *const rp_log_level_names[RP_LOG_LEVEL_COUNT_] = {"debug", "info", "warn",
                                                                    "error"};

const char *rp_log_level_string(rp_log_level l) {
    if ((int)l < 0 || l >= RP_LOG_LEVEL_COUNT_) return "unknown";
    return rp_log_level_names[l];
}

void rp_log_setup(rp_log_level min, rp_log_format format) {
    __atomic_store_n(&rp_log_min_level, min, __ATOMIC_RELAXED);
    __atomic_store_n(&rp_log_fmt, format, __ATOMIC_RELAXED);
}

/* RFC 3339 UTC with milliseconds. */
static void rp_log_time(char *buf, size_t n) {
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    size_t len = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + len, n - len, ".%03dZ", (int)(tv.tv_usec / 1000));
}

/* Text values are written bare when safe, else quoted with escapes, so a
 * line always stays one line whatever a value holds. */
static void rp_log_text_value(FILE *f, const char *v) {
    if (v == NULL) {
        fputc('-', f);
        return;
    }
    bool bare = *v != '\0';
    for (const char *p = v; *p && bare; p++)
        if (*p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x20 || *p == 0x7f)
            bare = false;
    if (bare) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\x%02x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

void rp_log_write(rp_log_level level, const char *msg, ...) {
    char ts[40];
    rp_log_time(ts, sizeof ts);
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (f == NULL) return;
    va_list ap;
    va_start(ap, msg);
    if (__atomic_load_n(&rp_log_fmt, __ATOMIC_RELAXED) == RP_LOG_FORMAT_JSON) {
        json_t *o = json_object();
        json_object_set_new(o, "time", json_string(ts));
        json_object_set_new(o, "level", json_string(rp_log_level_string(level)));
        json_object_set_new(o, "msg", json_string(msg));
        const char *k;
        while ((k = va_arg(ap, const char *)) != NULL) {
            const char *v = va_arg(ap, const char *);
            /* json_string refuses invalid UTF-8: keep the line, mark it. */
            json_t *jv = v ? json_string(v) : json_null();
            json_object_set_new(o, k, jv ? jv : json_string("(invalid utf-8)"));
        }
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (s) fputs(s, f);
        free(s);
        json_decref(o);
    } else {
        fprintf(f, "%s %-5s ", ts, rp_log_level_string(level));
        rp_log_text_value(f, msg);
        const char *k;
        while ((k = va_arg(ap, const char *)) != NULL) {
            const char *v = va_arg(ap, const char *);
            fprintf(f, " %s=", k);
            rp_log_text_value(f, v);
        }
    }
    va_end(ap);
    fputc('\n', f);
    fclose(f);
    /* One write per line so lines from threads never interleave. */
    ssize_t off = 0;
    while ((size_t)off < len) {
        ssize_t w = write(STDERR_FILENO, line + off, len - off);
        if (w <= 0) break;
        off += w;
    }
    free(line);
}
