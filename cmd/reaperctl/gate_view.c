/* `reaperctl gate` for people (gate_view.h). */
#include "gate_view.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "rp_utf8.h"
#include "table.h"

bool rp_ctl_body_mode_parse(const char *s, rp_ctl_body_mode *out) {
    static const struct {
        const char *name;
        rp_ctl_body_mode mode;
    } modes[] = {{"raw", RP_CTL_BODY_RAW}, {"text", RP_CTL_BODY_TEXT}, {"hex", RP_CTL_BODY_HEX}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(s, modes[i].name) == 0) {
            *out = modes[i].mode;
            return true;
        }
    return false;
}

long rp_ctl_base64_decode(const char *in, uint8_t *out, size_t cap) {
    size_t len = strlen(in);
    if (len % 4 != 0 || len / 4 * 3 > cap) return -1;
    if (len == 0) return 0;
    int n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)len);
    if (n < 0) return -1;
    /* EVP_DecodeBlock counts the padding as bytes. */
    if (in[len - 1] == '=') n--;
    if (in[len - 2] == '=') n--;
    return n;
}

/* Whether body is UTF-8; when more follows, a sequence the window's end
 * cut is allowed. */
static bool rp_is_text(const uint8_t *body, size_t len, bool more) {
    if (rp_utf8_valid(body, len)) return true;
    for (size_t cut = 1; more && cut <= 3 && cut < len; cut++)
        if (rp_utf8_valid(body, len - cut)) return true;
    return false;
}

static void rp_print_text(FILE *f, const uint8_t *body, size_t len) {
    /* Line by line, so that the body's own newlines stay newlines; every
     * other control character escaped. */
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && body[i] != '\n') continue;
        char *line = strndup((const char *)body + start, i - start);
        if (line != NULL && strlen(line) == i - start) rp_ctl_fputs(f, line);
        else if (line != NULL) {
            /* A NUL inside: escaped byte by byte. */
            for (size_t k = start; k < i; k++) {
                char one[2] = {(char)body[k], 0};
                if (body[k] == 0) fputs("\\x00", f);
                else rp_ctl_fputs(f, one);
            }
        }
        free(line);
        fputc('\n', f);
        start = i + 1;
    }
}

static void rp_print_hex(FILE *f, const uint8_t *body, size_t len) {
    for (size_t off = 0; off < len; off += 16) {
        fprintf(f, "%08zx ", off);
        for (size_t i = 0; i < 16; i++) {
            if (off + i < len) fprintf(f, " %02x", body[off + i]);
            else fputs("   ", f);
        }
        fputs("  |", f);
        for (size_t i = 0; i < 16 && off + i < len; i++) {
            uint8_t c = body[off + i];
            fputc(c >= 0x20 && c < 0x7f ? c : '.', f);
        }
        fputs("|\n", f);
    }
}

void rp_ctl_print_body(FILE *f, const uint8_t *body, size_t len, bool more, rp_ctl_body_mode mode) {
    if (mode == RP_CTL_BODY_RAW) {
        fwrite(body, 1, len, f);
        return;
    }
    if (mode == RP_CTL_BODY_HEX || (mode == RP_CTL_BODY_AUTO && !rp_is_text(body, len, more)))
        rp_print_hex(f, body, len);
    else
        rp_print_text(f, body, len);
}

static const char *rp_s(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Any JSON value as one line of text (a string as it is); heap. */
static char *rp_compact(const json_t *v) {
    if (json_is_string(v)) return strdup(json_string_value(v));
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static void rp_kv(FILE *f, const char *key, const char *value) {
    fputs("  ", f);
    rp_ctl_fputs(f, key);
    fputs(": ", f);
    rp_ctl_fputs(f, value);
    fputc('\n', f);
}

static void rp_print_map(FILE *f, const char *title, const json_t *map, const char *skip) {
    fprintf(f, "%s:\n", title);
    if (!json_is_object(map) || json_object_size(map) == 0) {
        fputs("  (none)\n", f);
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)map, k, v) {
        if (skip != NULL && strcmp(k, skip) == 0) continue;
        char *s = rp_compact(v);
        rp_kv(f, k, s);
        free(s);
    }
}

/* The x-death entries, newest first as the broker keeps them. */
static void rp_print_x_death(FILE *f, const json_t *headers) {
    const json_t *xd = json_object_get(headers, "x-death");
    if (!json_is_array(xd) || json_array_size(xd) == 0) return;
    static const char *const head[] = {"COUNT", "REASON", "QUEUE", "EXCHANGE", "TIME",
                                       "ROUTING-KEYS"};
    static const char *const keys[] = {"count", "reason", "queue", "exchange", "time",
                                       "routing-keys"};
    rp_table *t = rp_table_new(6, head);
    if (t == NULL) return;
    size_t i;
    json_t *e;
    json_array_foreach(xd, i, e) {
        char *cells[6];
        for (size_t c = 0; c < 6; c++) {
            const json_t *v = json_object_get(e, keys[c]);
            cells[c] = v != NULL ? rp_compact(v) : NULL;
        }
        rp_table_add(t, (const char *const *)cells);
        for (size_t c = 0; c < 6; c++) free(cells[c]);
    }
    fputs("x-death history:\n", f);
    rp_table_print(t, f, "  ");
    rp_table_free(t);
}

void rp_ctl_print_gate(FILE *f, const json_t *r) {
    const json_t *g = json_object_get(r, "gate"), *job = json_object_get(r, "job");
    const json_t *dl = json_object_get(r, "dead_letter"), *rep = json_object_get(r, "replay");
    fprintf(f, "gate %lld (", (long long)json_integer_value(json_object_get(g, "id")));
    rp_ctl_fputs(f, rp_s(g, "kind"));
    fputs("), ", f);
    rp_ctl_fputs(f, rp_s(g, "state"));
    if (json_is_string(json_object_get(g, "answer"))) {
        fputs(": ", f);
        rp_ctl_fputs(f, rp_s(g, "answer"));
        fputs(" by ", f);
        rp_ctl_fputs(f, rp_s(g, "answered_by"));
    }
    fputs(", project ", f);
    rp_ctl_fputs(f, rp_s(g, "project"));
    fputs(", opened ", f);
    rp_ctl_fputs(f, rp_s(g, "created_at"));
    fputc('\n', f);
    rp_kv(f, "question", rp_s(g, "question"));
    fprintf(f, "job %lld (", (long long)json_integer_value(json_object_get(job, "id")));
    rp_ctl_fputs(f, rp_s(job, "kind"));
    fputs("): ", f);
    rp_ctl_fputs(f, rp_s(job, "state"));
    fprintf(f, ", attempts %lld of %lld\n", (long long)json_integer_value(json_object_get(job, "attempts")),
            (long long)json_integer_value(json_object_get(job, "max_attempts")));
    if (json_is_true(json_object_get(rep, "possible"))) {
        fputs("replay: would go ahead now\n", f);
    } else {
        fputs("replay: not possible: ", f);
        rp_ctl_fputs(f, rp_s(rep, "why"));
        fputc('\n', f);
    }
    if (!json_is_object(dl)) {
        fputs("no stored message (not a dead-letter gate)\n", f);
        return;
    }
    fputs("dead letter: found on ", f);
    rp_ctl_fputs(f, rp_s(dl, "queue"));
    fputs(" (vhost ", f);
    rp_ctl_fputs(f, rp_s(dl, "vhost"));
    fputs("), died on ", f);
    rp_ctl_fputs(f, rp_s(dl, "origin_queue"));
    fputs(" (", f);
    rp_ctl_fputs(f, rp_s(dl, "reason"));
    fputs("), parked ", f);
    rp_ctl_fputs(f, rp_s(dl, "parked_at"));
    fputc('\n', f);
    rp_print_map(f, "properties", json_object_get(dl, "properties"), NULL);
    rp_print_map(f, "headers", json_object_get(dl, "headers"), "x-death");
    rp_print_x_death(f, json_object_get(dl, "headers"));
    const json_t *b = json_object_get(dl, "body");
    fprintf(f, "body: %lld bytes stored%s\n", (long long)json_integer_value(json_object_get(b, "size")),
            json_is_true(json_object_get(b, "truncated"))
                ? " (the message's body was longer: cut when parked; a replay is refused)"
                : "");
}
