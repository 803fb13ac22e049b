/*
 * rp_amqp_msg.h - assembling deliveries from frames, without blocking.
 *
 * rabbitmq-c's amqp_consume_message() reads a delivery's header and body
 * frames with no bound on the wait, so reaper assembles them itself: the
 * loop hands every frame the connection does not handle to
 * rp_amqp_assembler_frame(); a basic.deliver starts a message on its
 * channel, the content header gives its properties and size, body frames
 * fill it, and the finished message goes to the handler.
 *
 * A body larger than the assembler's body_limit is not kept whole: the first
 * body_limit bytes are kept and the message is marked truncated (its
 * declared size stays in body_size), so a hostile or huge message can cost
 * at most body_limit bytes.
 *
 * A body that arrives in one frame is not copied: the message's body then
 * points into that frame (the library's, valid for the handler's call, as
 * every frame is: the connection releases its buffers only after the
 * handler returns). A body over several frames is assembled in the
 * channel's buffer, kept for the next delivery.
 *
 * Ownership: a finished rp_amqp_message is LENT to the handler for the call
 * only (its memory is the assembler's or the frame's and is reused); a
 * handler that keeps anything copies it, or takes the properties' pool
 * (rp_amqp_assembler_take_pool). Strings inside are amqp_bytes_t
 * (not NUL-terminated). Frames are borrowed for the call.
 */
#ifndef RP_AMQP_MSG_H
#define RP_AMQP_MSG_H

#include <amqp.h>
#include <stdbool.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_status.h"

#define RP_AMQP_MAX_CHANNELS 4
/* The page of a message's properties' pool (rabbitmq-c callocs one at the
 * first allocation; a piece larger than a page gets a block of its own).
 * A dead letter's decoded properties (x-death and x-first-death-*, the
 * delivery's names) take about 700 bytes, and the tap keeps every
 * delivery's pool (rp_amqp_assembler_take_pool): a page of 4 KiB zeroed
 * 4 KiB per delivery and held 3 KiB more than it used (issue 21: 4,500
 * instructions of each dead letter's 62,000 in bench/tap_cost). */
#define RP_AMQP_POOL_PAGE 1024u

typedef struct rp_amqp_message {
    uint16_t channel;
    uint64_t delivery_tag;
    bool redelivered;
    amqp_bytes_t consumer_tag;
    amqp_bytes_t exchange;
    amqp_bytes_t routing_key;
    amqp_basic_properties_t props; /* deep copy; headers included */
    const uint8_t *body;           /* body_len bytes kept: the buffer's or the frame's */
    size_t body_len;
    uint64_t body_size;            /* as declared by the content header */
    bool truncated;                /* body_len < body_size */
    amqp_pool_t pool;              /* owns every pointer above but body */
} rp_amqp_message;

typedef void (*rp_amqp_message_fn)(void *arg, const rp_amqp_message *msg);

typedef struct rp_amqp_assembler {
    size_t body_limit;
    rp_amqp_message_fn on_message;
    void *arg;
    struct {
        bool active;    /* a delivery is being assembled on this channel */
        bool have_header;
        bool handing;   /* its message is being handed (rp_amqp_assembler_take_pool) */
        rp_amqp_message msg;
        uint8_t *buf;      /* the body buffer, kept across deliveries */
        size_t body_cap;   /* the buffer's size */
        size_t keep;       /* bytes of this delivery's body kept at most */
        uint64_t received; /* body bytes seen, kept or not */
        size_t limit;      /* this channel's body limit; 0: body_limit */
    } ch[RP_AMQP_MAX_CHANNELS];
} rp_amqp_assembler;

void rp_amqp_assembler_init(rp_amqp_assembler *a, size_t body_limit, rp_amqp_message_fn fn,
                            void *arg);
void rp_amqp_assembler_cleanup(rp_amqp_assembler *a);
/* Gives one channel its own body limit (each consumer on its channel keeps
 * what it needs: a control request far less than a dead letter). A channel
 * beyond RP_AMQP_MAX_CHANNELS is ignored. */
void rp_amqp_assembler_set_limit(rp_amqp_assembler *a, uint16_t channel, size_t body_limit);
/* Drops any half-assembled delivery (the connection was lost: the broker
 * redelivers it). */
void rp_amqp_assembler_reset(rp_amqp_assembler *a);

/* Feeds one frame. Returns true when the frame belonged to a delivery
 * (basic.deliver, its header or body), false when the caller must handle it
 * (confirms, returns, cancels, ...). RP_ERR_* through *st on a protocol
 * error or no memory (the connection should then be rebuilt). */
bool rp_amqp_assembler_frame(rp_amqp_assembler *a, const amqp_frame_t *f, rp_status *st);

/* Inside the handler only: moves the pool of the message being handed
 * (msg->pool: its properties, headers and names) to *out, which the caller
 * then owns (empty_amqp_pool), so that a handler keeping the properties
 * needs no second copy; msg->props stay valid in *out. The channel starts
 * its next delivery with a fresh pool. False (nothing moved) when no
 * message is being handed on that channel. */
bool rp_amqp_assembler_take_pool(rp_amqp_assembler *a, const rp_amqp_message *msg,
                                 amqp_pool_t *out);

/* Deep-copies the flagged fields of src into dst, allocating from pool
 * (fields whose flag is clear are zeroed: the library leaves them
 * uninitialised). False when out of memory. */
bool rp_amqp_props_copy(amqp_pool_t *pool, const amqp_basic_properties_t *src,
                        amqp_basic_properties_t *dst);


/* Copies a short string property into buf as a NUL-terminated string ("" when
 * absent); false when absent. A NUL inside is kept as is (the caller
 * decides). */
bool rp_amqp_prop_string(const amqp_basic_properties_t *p, amqp_flags_t flag, char *buf,
                         size_t n);

#endif
