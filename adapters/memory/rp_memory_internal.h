/*
 * rp_memory_internal.h - the memory adapter's state, shared by its files.
 * Not for use outside adapters/memory.
 *
 * Ownership: struct rp_memory owns every array and string it points to; the
 * *_view arrays are what the ports lend (rebuilt on each call that lends).
 */
#ifndef RP_MEMORY_INTERNAL_H
#define RP_MEMORY_INTERNAL_H

#include "rp_memory.h"

typedef struct rp__mem_queue {
    rp_queue_facts facts;   /* vhost and name point to the two strings below */
    char *vhost;
    char *name;
    char *dlx_name;         /* facts.dlx_name and dlx_routing_key point here */
    char *dlx_routing_key;
    bool timeout_set;
    rp_timeout_in_force timeout;
    char *timeout_origin;
} rp__mem_queue;

typedef struct rp__mem_dl {
    char *vhost;
    char *queue;
    rp_dl_message msg;      /* its slices point into the owned copies below */
    rp_xdeath *x_death;
    uint8_t *message_id, *first_queue, *first_reason, *body;
    uint8_t **entry_bytes;  /* 2 per entry: queue, reason */
} rp__mem_dl;

typedef struct rp__mem_fail {
    bool armed;
    bool once; /* disarm after the first failure */
    rp_status st;
    size_t after;
    size_t calls;
} rp__mem_fail;

struct rp_memory {
    rp_time_ms now;
    size_t page_size;
    rp__mem_fail fail[RP_MEM_OP_COUNT_];
    size_t write_calls;

    rp_mem_job *jobs;
    size_t n_jobs, cap_jobs;
    int64_t next_job_id;

    rp_mem_event *ledger;
    size_t n_ledger, cap_ledger;
    int64_t next_seq;

    rp_mem_event *published;
    size_t n_published, cap_published;

    rp_sighting_row *sightings;  /* keys are owned heap strings */
    size_t n_sightings, cap_sightings;

    rp_gate *gates;
    size_t n_gates, cap_gates;
    int64_t next_gate_id;

    rp_mem_parked *parked;
    size_t n_parked, cap_parked;

    rp__mem_queue *queues;
    size_t n_queues, cap_queues;

    rp__mem_dl *dls;
    size_t n_dls, cap_dls;

    /* The lease batch taken last (take_leases), and its rows as lent. */
    rp_held_job *lease_view;
    size_t n_lease_view, cap_lease_view;
    bool lease_batch_locked;

    /* What the ports lend. */
    rp_queue_facts *page_view;
    rp_claimable_job *claim_view;
    rp_sighting_row *sighting_view;
    rp_dl_message *peek_view;
};

/* Makes room for one more element of size elem in *items. */
rp_status rp__mem_grow(void **items, size_t *cap, size_t n, size_t elem) RP_MUSTCHECK;
/* Counts a call of op and says whether it must fail (RP_OK: go on). */
rp_status rp__mem_enter(rp_memory *m, rp_memory_op op) RP_MUSTCHECK;
/* strdup that keeps NULL as NULL; *ok is cleared on allocation failure. */
char *rp__mem_strdup(const char *s, bool *ok);
/* Appends a ledger event with a copy of v; fills *ev. */
rp_status rp__mem_append(rp_memory *m, const rp_verdict *v, rp_event_ref *ev) RP_MUSTCHECK;
/* Opens a gate; its id goes to *id. Strings are copied (origin and reason
 * may be NULL). */
rp_status rp__mem_open_gate(rp_memory *m, rp_gate_kind kind, int64_t job_id, const char *project,
                            const char *question, const char *queue, const char *origin,
                            const char *reason, int64_t *id) RP_MUSTCHECK;
rp_mem_job *rp__mem_find_job(rp_memory *m, int64_t id);
void rp__mem_job_cleanup(rp_mem_job *j);
void rp__mem_event_cleanup(rp_mem_event *e);
void rp__mem_queue_cleanup(rp__mem_queue *q);
void rp__mem_dl_cleanup(rp__mem_dl *d);
void rp__mem_parked_cleanup(rp_mem_parked *p);

/* The ports, one file each. */
void rp__mem_store_port(rp_memory *m, rp_store_port *out);
void rp__mem_broker_port(rp_memory *m, rp_broker_port *out);
void rp__mem_dead_letter_port(rp_memory *m, rp_dead_letter_port *out);
void rp__mem_gate_port(rp_memory *m, rp_gate_port *out);
void rp__mem_publisher_port(rp_memory *m, rp_publisher_port *out);

#endif
