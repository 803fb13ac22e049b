/*
 * rp_pg_answer_set.h - the answer-set port (core/rp_answer_set_port.h) over
 * PostgreSQL (migration 0011: answer_set, answer_set_item).
 *
 * create: in one REPEATABLE READ transaction, the open gates that take the
 * choice and match the filters (or are among the ids named) are counted by
 * origin queue and, unless a dry run, frozen into answer_set_item with
 * their answer_set row (filters kept as jsonb). take: the oldest running
 * set whose lease is free or run out (FOR UPDATE SKIP LOCKED: two replicas
 * never take one set). step: the marks, the lease renewal and the next
 * pending ids in one transaction fenced on the owner. No new statement is
 * prepared: these run as plain parameterised statements (a set's step runs
 * once per batch of gates, not per gate).
 *
 * Threading and ownership as rp_pg_store.h: the store thread; the port's
 * self borrows the store.
 */
#ifndef RP_PG_ANSWER_SET_H
#define RP_PG_ANSWER_SET_H

#include "rp_answer_set_port.h"
#include "rp_pg_store.h"

void rp_pg_answer_set_port(rp_pg_store *s, rp_answer_set_port *out);

#endif
