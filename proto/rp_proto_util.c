/* Small pieces of the codec: limits, names, errors, quoting, UTF-8, buffers
 * and times. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rp_proto.h"
#include "rp_proto_internal.h"

const rp_proto_limits rp_proto_request_limits = {
    RP_PROTO_REQUEST_MAX_BODY,    RP_PROTO_REQUEST_MAX_DEPTH, RP_PROTO_REQUEST_MAX_STRING,
    RP_PROTO_REQUEST_MAX_ENTRIES, RP_PROTO_REQUEST_MAX_NODES,
};

const rp_proto_limits rp_proto_reply_limits = {
    RP_PROTO_REPLY_MAX_BODY,    RP_PROTO_REPLY_MAX_DEPTH, RP_PROTO_REPLY_MAX_STRING,
    RP_PROTO_REPLY_MAX_ENTRIES, RP_PROTO_REPLY_MAX_NODES,
};

/* ---- encodings ---------------------------------------------------------- */

static const char *const rp_encoding_names[RP_ENC_COUNT_] = {RP_PROTO_CT_MSGPACK,
                                                             RP_PROTO_CT_JSON};

const char *rp_encoding_content_type(rp_encoding e) {
    if ((int)e < 0 || e >= RP_ENC_COUNT_) return "unknown";
    return rp_encoding_names[e];
}

static bool rp_is_space(uint8_t c) { return c == ' ' || c == '\t'; }

/* The media type of ct without parameters and surrounding blanks. */
static void rp_media_type(rp_bytes ct, const char **p, size_t *n) {
    size_t a = 0, b = 0;
    while (b < ct.len && ct.ptr[b] != ';') b++;
    while (a < b && rp_is_space(ct.ptr[a])) a++;
    while (b > a && rp_is_space(ct.ptr[b - 1])) b--;
    *p = (const char *)ct.ptr + a;
    *n = b - a;
}

static bool rp_media_is(const char *p, size_t n, const char *want) {
    return n == strlen(want) && strncasecmp(p, want, n) == 0;
}

static bool rp_encoding_try(rp_bytes ct, rp_encoding *out) {
    const char *p;
    size_t n;
    if (ct.ptr == NULL || ct.len == 0) {
        *out = RP_ENC_MSGPACK;
        return true;
    }
    rp_media_type(ct, &p, &n);
    if (n == 0 || rp_media_is(p, n, RP_PROTO_CT_MSGPACK) ||
        rp_media_is(p, n, "application/x-msgpack")) {
        *out = RP_ENC_MSGPACK;
        return true;
    }
    if (rp_media_is(p, n, RP_PROTO_CT_JSON)) {
        *out = RP_ENC_JSON;
        return true;
    }
    return false;
}

rp_status rp_encoding_parse(rp_bytes ct, rp_encoding *out) {
    return rp_encoding_try(ct, out) ? RP_OK : RP_ERR_BAD_REQUEST;
}

rp_encoding rp_proto_reply_encoding(rp_bytes ct) {
    rp_encoding e = RP_ENC_MSGPACK;
    if (!rp_encoding_try(ct, &e)) e = RP_ENC_MSGPACK;
    return e;
}

/* ---- ops and error codes ------------------------------------------------ */

static const char *const rp_op_names[RP_OP_COUNT_] = {"none",   "reap", "answer", "gates",
                                                      "status", "jobs", "job",    "cancel",
                                                      "gate",   "doctor", "stats",
                                                      "answer_many", "answer_set"};

const char *rp_op_string(rp_op op) {
    if ((int)op < 0 || op >= RP_OP_COUNT_) return "unknown";
    return rp_op_names[op];
}

bool rp_op_parse(const char *s, rp_op *out) {
    if (s == NULL) return false;
    for (int i = RP_OP_NONE + 1; i < RP_OP_COUNT_; i++)
        if (strcmp(rp_op_names[i], s) == 0) {
            *out = (rp_op)i;
            return true;
        }
    return false;
}

const char *rp_proto_error_code(rp_status s) {
    switch (s) {
    case RP_ERR_BAD_REQUEST:
    case RP_ERR_UNKNOWN_OP:
    case RP_ERR_FORBIDDEN:
    case RP_ERR_NOT_FOUND:
    case RP_ERR_CONFLICT:
    case RP_ERR_UNAVAILABLE:
    case RP_ERR_INTERNAL:
    case RP_ERR_BUSY:
        return rp_status_string(s);
    case RP_ERR_TOO_LARGE:
    case RP_ERR_INVALID:
        return rp_status_string(RP_ERR_BAD_REQUEST);
    case RP_ERR_TIMEOUT:
    case RP_ERR_CLOSED:
    case RP_ERR_IO:
        return rp_status_string(RP_ERR_UNAVAILABLE);
    default:
        return rp_status_string(RP_ERR_INTERNAL);
    }
}

bool rp_proto_error_code_parse(const char *code, rp_status *out) {
    static const rp_status codes[] = {RP_ERR_BAD_REQUEST, RP_ERR_UNKNOWN_OP, RP_ERR_FORBIDDEN,
                                      RP_ERR_NOT_FOUND,   RP_ERR_CONFLICT,   RP_ERR_UNAVAILABLE,
                                      RP_ERR_INTERNAL,    RP_ERR_BUSY};
    if (code == NULL) return false;
    for (size_t i = 0; i < RP_ARRAY_LEN(codes); i++)
        if (strcmp(rp_status_string(codes[i]), code) == 0) {
            *out = codes[i];
            return true;
        }
    return false;
}

/* ---- errors and quoting ------------------------------------------------- */

void rp_proto_error_init(rp_proto_error *err) { memset(err, 0, sizeof *err); }

rp_status rp__err_set(rp_proto_error *err, rp_status code, const char *fmt, ...) {
    if (err == NULL) return code;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    if (n < 0) err->message[0] = '\0';
    size_t len = strlen(err->message);
    err->message[rp__utf8_cut(err->message, len, len)] = '\0';
    err->code = code;
    return code;
}

size_t rp__utf8_seq(const uint8_t *p, size_t n) {
    if (n == 0) return 0;
    uint8_t c = p[0];
    if (c < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xbf; /* range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;       /* no overlongs */
        else if (c == 0xed) hi = 0x9f;  /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;       /* no overlongs */
        else if (c == 0xf4) hi = 0x8f;  /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xbf) return 0;
    return len;
}

bool rp__utf8_valid(const uint8_t *p, size_t n, size_t *bad) {
    size_t i = 0;
    while (i < n) {
        /* Eight ASCII bytes at a time (issue 21): a word with no high bit. */
        if (n - i >= 8) {
            uint64_t x;
            memcpy(&x, p + i, 8);
            if ((x & 0x8080808080808080ull) == 0) {
                i += 8;
                continue;
            }
        }
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = rp__utf8_seq(p + i, n - i);
        if (k == 0) {
            if (bad != NULL) *bad = i;
            return false;
        }
        i += k;
    }
    return true;
}

size_t rp__utf8_cut(const char *s, size_t len, size_t max) {
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0;
    if (max > len) max = len;
    while (i < max) {
        size_t k = p[i] < 0x80 ? 1 : rp__utf8_seq(p + i, len - i);
        if (k == 0 || i + k > max) break;
        i += k;
    }
    return i;
}

void rp__quote(char *dst, size_t size, const char *s, size_t len) {
    const uint8_t *p = (const uint8_t *)s;
    size_t o = 0, i = 0;
    /* Room kept at the end for the closing quote, "..." and the NUL. */
    const size_t reserve = 5;
    if (size < 8) {
        if (size > 0) dst[0] = '\0';
        return;
    }
    dst[o++] = '"';
    while (i < len && i < RP_PROTO_QUOTE_MAX) {
        uint8_t c = p[i];
        char piece[8];
        size_t k = 1, plen;
        if (c == '"' || c == '\\') {
            piece[0] = '\\';
            piece[1] = (char)c;
            plen = 2;
        } else if (c >= 0x20 && c < 0x7f) {
            piece[0] = (char)c;
            plen = 1;
        } else if (c >= 0x80 && (k = rp__utf8_seq(p + i, len - i)) > 0 &&
                   i + k <= RP_PROTO_QUOTE_MAX) {
            memcpy(piece, p + i, k);
            plen = k;
        } else {
            k = 1;
            snprintf(piece, sizeof piece, "\\x%02x", c);
            plen = 4;
        }
        if (o + plen + reserve > size) break;
        memcpy(dst + o, piece, plen);
        o += plen;
        i += k;
    }
    dst[o++] = '"';
    if (i < len) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o] = '\0';
}

const char *rp__type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "a map";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a float";
    case JSON_TRUE:
    case JSON_FALSE: return "a bool";
    case JSON_NULL: return "null";
    }
    return "an unknown value";
}

bool rp__utf8_fixed(const char *s, size_t n, const char **out, size_t *out_n, char **owned) {
    *owned = NULL;
    if (rp__utf8_valid((const uint8_t *)s, n, NULL)) {
        *out = s;
        *out_n = n;
        return true;
    }
    /* Each bad byte becomes U+FFFD (3 bytes). */
    if (n > (SIZE_MAX - 1) / 3) return false;
    char *fixed = malloc(n * 3 + 1);
    if (fixed == NULL) return false;
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        size_t k = p[i] < 0x80 ? 1 : rp__utf8_seq(p + i, n - i);
        if (k == 0) {
            memcpy(fixed + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(fixed + o, p + i, k);
            o += k;
            i += k;
        }
    }
    fixed[o] = '\0';
    *out = *owned = fixed;
    *out_n = o;
    return true;
}

json_t *rp__json_string(const char *s) {
    if (s == NULL) return json_null();
    const char *t;
    size_t n;
    char *owned;
    if (!rp__utf8_fixed(s, strlen(s), &t, &n, &owned)) return NULL;
    json_t *j = json_stringn_nocheck(t, n);
    free(owned);
    return j;
}

bool rp__set(json_t *obj, const char *key, json_t *value) {
    if (value == NULL) return false;
    return json_object_set_new_nocheck(obj, key, value) == 0;
}

/* ---- buffers ------------------------------------------------------------ */

void rp_proto_buf_init(rp_proto_buf *b) { memset(b, 0, sizeof *b); }

void rp_proto_buf_cleanup(rp_proto_buf *b) {
    free(b->ptr);
    memset(b, 0, sizeof *b);
}

/* ---- times -------------------------------------------------------------- */

/* Howard Hinnant's civil calendar algorithms (proleptic Gregorian). */
static int64_t rp_days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void rp_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const int64_t doe = z - era * 146097;
    const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const int64_t mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* -62167219200000 is 0000-01-01T00:00:00.000Z, 253402300799999 is
 * 9999-12-31T23:59:59.999Z. */
#define RP_TIME_MIN_MS (-62167219200000LL)
#define RP_TIME_MAX_MS 253402300799999LL

bool rp_proto_format_time(rp_time_ms t, char *buf, size_t size) {
    if (buf == NULL || size < RP_PROTO_TIME_SIZE) return false;
    buf[0] = '\0';
    if (t < RP_TIME_MIN_MS || t > RP_TIME_MAX_MS) return false;
    int64_t days = t / 86400000, ms = t % 86400000;
    if (ms < 0) {
        ms += 86400000;
        days--;
    }
    int64_t y;
    unsigned m, d;
    rp_civil_from_days(days, &y, &m, &d);
    unsigned hh = (unsigned)(ms / 3600000), mm = (unsigned)(ms / 60000 % 60),
             ss = (unsigned)(ms / 1000 % 60), fff = (unsigned)(ms % 1000);
    snprintf(buf, size, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ", (unsigned)y, m, d, hh, mm, ss,
             fff);
    return true;
}

static bool rp_digits(const char *s, size_t n, unsigned *out) {
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return true;
}

bool rp_proto_parse_time(const char *s, rp_time_ms *out) {
    /* YYYY-MM-DDTHH:MM:SS.sssZ */
    static const unsigned mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    unsigned y, mo, d, h, mi, se, ms;
    if (s == NULL || strlen(s) != 24) return false;
    if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
        s[19] != '.' || s[23] != 'Z')
        return false;
    if (!rp_digits(s, 4, &y) || !rp_digits(s + 5, 2, &mo) || !rp_digits(s + 8, 2, &d) ||
        !rp_digits(s + 11, 2, &h) || !rp_digits(s + 14, 2, &mi) ||
        !rp_digits(s + 17, 2, &se) || !rp_digits(s + 20, 3, &ms))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 59)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap) return false;
    int64_t days = rp_days_from_civil((int64_t)y, mo, d);
    *out = ((days * 24 + h) * 60 + mi) * 60000 + (int64_t)se * 1000 + ms;
    return true;
}
