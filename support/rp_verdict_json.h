/*
 * rp_verdict_json.h - a verdict as JSON through the streaming writer: the
 * one spelling of a verdict's JSON object that the ledger's payload
 * (adapters/postgres) and the wire codec's JSON encoding (proto/) both
 * write, in the shape proto/SCHEMA.md gives a verdict: object, queue,
 * project, condition, measured, threshold, unit, action, source, detail,
 * trusted. A text that is not strict UTF-8 has each bad byte written as
 * U+FFFD; a NULL text is null; a measured that is not finite is null.
 *
 * Ownership: v is borrowed. Threads: any (one writer per thread).
 */
#ifndef RP_VERDICT_JSON_H
#define RP_VERDICT_JSON_H

#include "rp_json_out.h"
#include "rp_verdict.h"

/* Writes v as one JSON object into w (a value where w expects one). The
 * enums must be in range (the caller checks). */
void rp_jout_verdict(rp_jout *w, const rp_verdict *v);

/* s as a JSON string with each byte that does not start strict UTF-8
 * written as U+FFFD; NULL: null. */
void rp_jout_text_fixed(rp_jout *w, const char *s);

#endif
