/*
 * gate_view.h - `reaperctl gate ID` for people: the gate, its job, whether a
 * replay would go ahead, the stored message's properties and headers (the
 * x-death history as a table), and its body as text when it is UTF-8, else
 * as a hex dump. Everything from the message is escaped (escape.h): a body
 * holding ESC [ 2 J prints as text, it never reaches the terminal raw.
 *
 * Ownership: everything is borrowed for the call.
 */
#ifndef RP_CTL_GATE_VIEW_H
#define RP_CTL_GATE_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum rp_ctl_body_mode {
    RP_CTL_BODY_AUTO = 0, /* text when UTF-8, else hex (the preview) */
    RP_CTL_BODY_TEXT,
    RP_CTL_BODY_HEX,
    RP_CTL_BODY_RAW,      /* the exact bytes, nothing else */
} rp_ctl_body_mode;

/* Parses "raw", "text" or "hex". */
bool rp_ctl_body_mode_parse(const char *s, rp_ctl_body_mode *out);

/* Decodes base64 (no line breaks) into out (cap >= 3 * len / 4). The
 * decoded length, or -1 when it is not base64. */
long rp_ctl_base64_decode(const char *in, uint8_t *out, size_t cap);

/* The body's bytes, shown as mode says (AUTO: text when body[0..len) is
 * UTF-8, a sequence cut by the window's end allowed when more follows). */
void rp_ctl_print_body(FILE *f, const uint8_t *body, size_t len, bool more, rp_ctl_body_mode mode);

/* The gate's reply (the op's result) without its body. */
void rp_ctl_print_gate(FILE *f, const json_t *result);

#endif
