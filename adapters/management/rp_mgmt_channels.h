/*
 * rp_mgmt_channels.h - the broker port's list_channels (core/rp_ports.h,
 * core/rp_stalled_broker.h) over the management API, for the broker half
 * of STALLED (issue 18 item 1):
 *
 *  1. GET /api/whoami: a user without the administrator or monitoring tag
 *     sees only its own channels (RabbitMQ's management tag), so a listing
 *     would miss every other user's: RP_ERR_FORBIDDEN, nothing listed.
 *  2. GET /api/channels?page=N&page_size=500&columns=name,vhost,user,
 *     connection_details.name,messages_unacknowledged,message_stats.ack,
 *     page by page; only the channels with messages_unacknowledged > 0 are
 *     kept (message_stats.ack absent: 0, the channel never acked; the
 *     statistics lag by the broker's collect_statistics_interval, 5 s by
 *     default). Checked on RabbitMQ 3.10.8 and 4.0.5: the same shapes, the
 *     nested columns work on both.
 *  3. When one is kept: GET /api/consumers?columns=queue.name,queue.vhost,
 *     channel_details.name, joined on the channel's name: the queues each
 *     kept channel consumes from. A channel that holds messages taken with
 *     basic.get has no consumer, so no queue: it is listed with none.
 *
 * Status mapping as rp_mgmt_broker.h; an answer that does not parse ->
 * RP_ERR_INTERNAL. Threads and ownership as the broker port: what it lends
 * stays valid until the next list_channels on the same broker.
 */
#ifndef RP_MGMT_CHANNELS_H
#define RP_MGMT_CHANNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_mgmt_broker.h"
#include "rp_stalled_broker.h"

typedef struct rp_mgmt_channels rp_mgmt_channels;

void rp_mgmt_channels_free(rp_mgmt_channels *c);

/* Where a broker keeps what list_channels lends (rp_mgmt_broker.c). */
rp_mgmt_channels **rp__mgmt_broker_channels_slot(rp_mgmt_broker *b);

/* The port function (self: an rp_mgmt_broker). */
rp_status rp_mgmt_broker_list_channels(void *self, rp_channel_list *out) RP_MUSTCHECK;

/* ---- Pure parsing, for tests on captured answers ---- */

/* Whether a /api/whoami body's tags (an array, or a comma-separated
 * string before 3.9) hold administrator or monitoring. */
bool rp_mgmt_sees_every_channel(const char *body, size_t len);

/* Adds the holding channels of one /api/channels answer (a page object or
 * a bare array) to c; *page_count gets the answer's page_count (1 for an
 * array). RP_ERR_INTERNAL for a body that does not parse (err says why),
 * RP_ERR_NOMEM. */
rp_status rp_mgmt_channels_add_page(rp_mgmt_channels *c, const char *body, size_t len,
                                    size_t *page_count, char *err, size_t cap) RP_MUSTCHECK;
/* Joins a /api/consumers answer on the channels added. */
rp_status rp_mgmt_channels_add_consumers(rp_mgmt_channels *c, const char *body, size_t len,
                                         char *err, size_t cap) RP_MUSTCHECK;
/* A new, empty set; NULL when out of memory. */
rp_mgmt_channels *rp_mgmt_channels_new(void);
/* Lends the channels added (valid until the set changes or is freed). */
void rp_mgmt_channels_view(rp_mgmt_channels *c, rp_channel_list *out);

#endif
