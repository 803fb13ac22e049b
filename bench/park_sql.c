/*
 * park_sql - prints one of the store's statements as reaperd prepares it, for
 * bench/park_cost (which runs it under callgrind in `postgres --single`).
 *
 *   park_sql NAME SCHEMA
 *
 * NAME is the statement's name in adapters/postgres/rp_pg_sql.c (e.g.
 * park_set); the schema and its sequences are written as reaperd writes
 * them (quoted identifier; the sequences as literals, named as
 * pg_get_serial_sequence names them for a schema reaperd migrated).
 * Exit status: 0 printed, 2 usage or unknown statement.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_pg_store_internal.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: park_sql NAME SCHEMA\n");
        return 2;
    }
    const char *schema = argv[2];
    char qs[256], seq[3][320];
    snprintf(qs, sizeof qs, "\"%s\"", schema);
    snprintf(seq[0], sizeof seq[0], "'%s.ledger_seq_seq'", schema);
    snprintf(seq[1], sizeof seq[1], "'%s.job_id_seq'", schema);
    snprintf(seq[2], sizeof seq[2], "'%s.gate_id_seq'", schema);
    rp__pg_subst sub = {qs, seq[0], seq[1], seq[2]};
    for (int i = 0; i < RP__PG_STMT_COUNT_; i++) {
        if (rp__pg_sql[i].name == NULL || strcmp(rp__pg_sql[i].name, argv[1]) != 0) continue;
        char *text = NULL;
        if (rp__pg_sql_expand(rp__pg_sql[i].text, &sub, &text) != RP_OK) return 2;
        puts(text);
        free(text);
        return 0;
    }
    fprintf(stderr, "park_sql: no statement named %s\n", argv[1]);
    return 2;
}
