/*
 * rp_reaperd_help.h - the text of `reaperd --help` (also written on
 * standard error after a usage error), beside the configuration table it
 * describes (rp_config.c, rp_config_doc.c). Static data: nothing to free.
 */
#ifndef RP_REAPERD_HELP_H
#define RP_REAPERD_HELP_H

/* The whole help text, newline-terminated, printed as is (no format). */
extern const char rp_reaperd_help[];

#endif
