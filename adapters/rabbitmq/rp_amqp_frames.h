/*
 * rp_amqp_frames.h - a publish's frames (basic.publish, the content header,
 * the body frames) encoded by reaper into one buffer, byte for byte what
 * rabbitmq-c 0.11's amqp_basic_publish writes (the method and the
 * properties through the library's exported encoders, amqp_encode_method
 * and amqp_encode_properties; the body split at frame_max - 8 as the
 * library splits it), so that a publisher flush of many publishes is one
 * write on the socket instead of three per publish (issue 21 item 3).
 *
 * Only for a plain TCP socket: over TLS the bytes must go through the
 * library's SSL socket, which keeps using amqp_basic_publish.
 *
 * Threads: any; a buffer belongs to one thread at a time.
 * Ownership: the buffer owns its bytes (rp_amqp_frames_free); what
 * rp_amqp_frames_publish is given is borrowed for the call.
 */
#ifndef RP_AMQP_FRAMES_H
#define RP_AMQP_FRAMES_H

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"

typedef struct rp_amqp_frames {
    uint8_t *bytes;
    size_t len, cap;
} rp_amqp_frames;

/* Appends one publish's frames on channel, the body split into frames of
 * at most frame_max - 8 bytes (frame_max: the connection's,
 * amqp_get_frame_max). props may be NULL (no properties, as the library
 * sends). Returns AMQP_STATUS_OK, AMQP_STATUS_NO_MEMORY, or the encoder's
 * error (a name over 255 bytes, a table too big for one frame); on an
 * error the buffer is as it was before the call. */
int rp_amqp_frames_publish(rp_amqp_frames *b, uint16_t channel, size_t frame_max,
                           amqp_bytes_t exchange, amqp_bytes_t routing_key, bool mandatory,
                           bool immediate, const amqp_basic_properties_t *props,
                           amqp_bytes_t body) RP_MUSTCHECK;

/* Empties the buffer, keeping its memory for the next flush (at most
 * keep bytes of it: a large flush's buffer is not kept forever). */
void rp_amqp_frames_reset(rp_amqp_frames *b, size_t keep);
void rp_amqp_frames_free(rp_amqp_frames *b);

/* Writes all of buf on fd (a socket, blocking or not: EAGAIN waits with
 * poll, as rabbitmq-c's own send does, but at most stall_ms without the
 * socket taking a byte). Returns AMQP_STATUS_OK, AMQP_STATUS_TIMEOUT (the
 * peer took nothing for stall_ms: part of buf may have gone, so the
 * connection is no longer usable) or AMQP_STATUS_SOCKET_ERROR (errno
 * kept). */
int rp_amqp_frames_write(int fd, const uint8_t *buf, size_t len, int stall_ms) RP_MUSTCHECK;

/* How many bytes a write on the TCP socket fd takes now without waiting:
 * three quarters of its send buffer (SO_SNDBUF; the kernel charges its own
 * bookkeeping against it too, hence the quarter kept back) less what is
 * queued on it and not yet acknowledged by the peer (SIOCOUTQ), which
 * *queued is set to. A peer that stops reading (a broker under a resource
 * alarm reads nothing more from a publishing connection) fills the queue
 * and the room goes to 0. SIZE_MAX (no bound) when the socket cannot say. */
size_t rp_amqp_socket_room(int fd, size_t *queued);

#endif
