/*
 * rp_text.h - allocating formatted strings for core.
 *
 * Core builds object names, sighting keys and detail sentences; each is a
 * fresh heap string its caller then owns.
 *
 * Ownership: rp_text_format() stores a heap string in *out that the caller
 * frees with free(); on failure *out is NULL.
 */
#ifndef RP_TEXT_H
#define RP_TEXT_H

#include <stdarg.h>

#include "rp_common.h"
#include "rp_status.h"

/* printf into a new heap string. RP_ERR_NOMEM when allocation fails,
 * RP_ERR_INVALID when the format fails (an encoding error). */
rp_status rp_text_format(char **out, const char *fmt, ...) RP_PRINTF(2, 3) RP_MUSTCHECK;
rp_status rp_text_vformat(char **out, const char *fmt, va_list ap) RP_PRINTF(2, 0) RP_MUSTCHECK;

#endif
