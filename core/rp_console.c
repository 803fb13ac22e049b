/* The browser console's decisions (rp_console.h). */
#include "rp_console.h"

#include <string.h>

static const char *const rp_console_access_strings[RP_CONSOLE_ACCESS_COUNT_] = {
    [RP_CONSOLE_AS_USER] = "",
    [RP_CONSOLE_AS_SELF] = "",
    [RP_CONSOLE_SIGN_IN] = "sign in with a broker user and password",
    [RP_CONSOLE_NOT_OFFERED] = "the console does not send this op; use reaperctl",
};

const char *rp_console_access_string(rp_console_access a) {
    if ((unsigned)a >= RP_CONSOLE_ACCESS_COUNT_) return "unknown";
    return rp_console_access_strings[a];
}

static const char *const rp_console_reads[] = {"gates", "gate", "status"};
/* The writes: an answer, a bulk answer (a group's "dismiss all": its dry
 * run too) and its set's progress or cancel (answer_set can cancel, so it
 * is sent signed in only). */
static const char *const rp_console_writes[] = {"answer", "answer_many", "answer_set"};

static bool rp_in(const char *op, const char *const *list, size_t n) {
    if (op == NULL) return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(op, list[i]) == 0) return true;
    return false;
}

bool rp_console_op_is_read(const char *op) {
    return rp_in(op, rp_console_reads, sizeof rp_console_reads / sizeof *rp_console_reads);
}

bool rp_console_op_offered(const char *op) {
    return rp_console_op_is_read(op) ||
           rp_in(op, rp_console_writes, sizeof rp_console_writes / sizeof *rp_console_writes);
}

rp_console_access rp_console_decide(const char *op, bool signed_in, bool anonymous_read) {
    if (!rp_console_op_offered(op)) return RP_CONSOLE_NOT_OFFERED;
    if (signed_in) return RP_CONSOLE_AS_USER;
    if (anonymous_read && rp_console_op_is_read(op)) return RP_CONSOLE_AS_SELF;
    return RP_CONSOLE_SIGN_IN;
}

static int rp_b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Standard base64 with padding; false on any other byte or a bad length. */
static bool rp_b64_decode(const char *in, size_t len, unsigned char *out, size_t cap,
                          size_t *outlen) {
    if (len == 0 || len % 4 != 0) return false;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)in[i + (size_t)k];
            if (c == '=' && i + 4 == len && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad > 0) return false; /* data after padding */
            v[k] = rp_b64_value(c);
            if (v[k] < 0) return false;
        }
        unsigned long w = ((unsigned long)v[0] << 18) | ((unsigned long)v[1] << 12) |
                          ((unsigned long)v[2] << 6) | (unsigned long)v[3];
        int n = 3 - pad;
        if (o + (size_t)n > cap) return false;
        for (int k = 0; k < n; k++) out[o++] = (unsigned char)(w >> (16 - 8 * k));
    }
    *outlen = o;
    return true;
}

bool rp_console_basic_parse(const char *header, char *user, size_t ucap, char *password,
                            size_t pcap) {
    if (ucap > 0) user[0] = '\0';
    if (pcap > 0) password[0] = '\0';
    if (header == NULL || ucap == 0 || pcap == 0) return false;
    /* The scheme is case-insensitive (RFC 7617), then one or more spaces. */
    static const char scheme[] = "basic";
    for (size_t i = 0; i < sizeof scheme - 1; i++) {
        char c = header[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != scheme[i]) return false;
    }
    const char *p = header + sizeof scheme - 1;
    if (*p != ' ') return false;
    while (*p == ' ') p++;
    size_t len = strlen(p);
    while (len > 0 && p[len - 1] == ' ') len--;
    unsigned char buf[1024];
    size_t n = 0;
    bool ok = rp_b64_decode(p, len, buf, sizeof buf, &n);
    const unsigned char *colon = ok ? memchr(buf, ':', n) : NULL;
    size_t ulen = colon ? (size_t)(colon - buf) : 0;
    size_t plen = colon ? n - ulen - 1 : 0;
    ok = colon != NULL && ulen > 0 && ulen < ucap && plen < pcap;
    for (size_t i = 0; ok && i < n; i++)
        if (buf[i] < 0x20 || buf[i] == 0x7f) ok = false;
    if (ok) {
        memcpy(user, buf, ulen);
        user[ulen] = '\0';
        memcpy(password, colon + 1, plen);
        password[plen] = '\0';
    } else {
        memset(user, 0, ucap);
        memset(password, 0, pcap);
    }
    memset(buf, 0, sizeof buf);
    return ok;
}
