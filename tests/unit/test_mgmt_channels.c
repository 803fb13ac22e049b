/* The management API's channel and consumer listings as the broker half of
 * STALLED reads them (adapters/management/rp_mgmt_channels.h), on answers
 * in the shapes RabbitMQ 3.10.8 and 4.0.5 gave on this machine: only the
 * channels that hold messages are kept, an absent ack count is 0, an
 * unacked count not reported yet is not holding, consumers are joined on
 * the channel's name (once per queue, on its own vhost), and the tags that
 * let a user see every channel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "rp_mgmt_channels.h"

static const char PAGE[] =
    "{\"total_count\":4,\"item_count\":4,\"filtered_count\":4,\"page\":1,\"page_size\":500,"
    "\"page_count\":2,\"items\":["
    "{\"connection_details\":{\"name\":\"127.0.0.1:60336 -> 127.0.0.1:5672\"},"
    "\"message_stats\":{\"ack\":0},\"messages_unacknowledged\":1,"
    "\"name\":\"127.0.0.1:60336 -> 127.0.0.1:5672 (1)\",\"user\":\"reaper\",\"vhost\":\"/\"},"
    "{\"connection_details\":{\"name\":\"c2\"},\"message_stats\":{\"ack\":9},"
    "\"messages_unacknowledged\":0,\"name\":\"c2 (1)\",\"user\":\"w\",\"vhost\":\"/\"},"
    "{\"connection_details\":{\"name\":\"c3\"},\"messages_unacknowledged\":3,"
    "\"name\":\"c3 (2)\",\"user\":\"w\",\"vhost\":\"v1\"},"
    "{\"connection_details\":{\"name\":\"c4\"},\"name\":\"c4 (1)\",\"vhost\":\"/\"}]}";

static const char CONSUMERS[] =
    "[{\"channel_details\":{\"name\":\"127.0.0.1:60336 -> 127.0.0.1:5672 (1)\"},"
    "\"queue\":{\"name\":\"vibey.work\",\"vhost\":\"/\"}},"
    "{\"channel_details\":{\"name\":\"127.0.0.1:60336 -> 127.0.0.1:5672 (1)\"},"
    "\"queue\":{\"name\":\"vibey.work\",\"vhost\":\"/\"}},"
    "{\"channel_details\":{\"name\":\"c3 (2)\"},\"queue\":{\"name\":\"a\",\"vhost\":\"v1\"}},"
    "{\"channel_details\":{\"name\":\"c3 (2)\"},\"queue\":{\"name\":\"b\",\"vhost\":\"v1\"}},"
    "{\"channel_details\":{\"name\":\"c3 (2)\"},\"queue\":{\"name\":\"x\",\"vhost\":\"/\"}},"
    "{\"channel_details\":{\"name\":\"c2 (1)\"},\"queue\":{\"name\":\"q\",\"vhost\":\"/\"}}]";

static const rp_channel_sample *find(const rp_channel_list *l, const char *name) {
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->channels[i].channel, name) == 0) return &l->channels[i];
    return NULL;
}

static void test_page_and_join(void **state) {
    (void)state;
    rp_mgmt_channels *c = rp_mgmt_channels_new();
    assert_non_null(c);
    size_t pages = 0;
    char err[200] = "";
    assert_int_equal(rp_mgmt_channels_add_page(c, PAGE, sizeof PAGE - 1, &pages, err, sizeof err),
                     RP_OK);
    assert_int_equal(pages, 2);
    assert_int_equal(rp_mgmt_channels_add_consumers(c, CONSUMERS, sizeof CONSUMERS - 1, err,
                                                    sizeof err),
                     RP_OK);
    rp_channel_list l;
    rp_mgmt_channels_view(c, &l);
    assert_int_equal(l.n, 2); /* c2 holds nothing, c4 reports no count yet */
    const rp_channel_sample *a = find(&l, "127.0.0.1:60336 -> 127.0.0.1:5672 (1)");
    assert_non_null(a);
    assert_string_equal(a->connection, "127.0.0.1:60336 -> 127.0.0.1:5672");
    assert_string_equal(a->vhost, "/");
    assert_string_equal(a->user, "reaper");
    assert_int_equal(a->unacked, 1);
    assert_int_equal(a->acked_total, 0);
    assert_int_equal(a->n_queues, 1); /* two consumers on one queue: once */
    assert_string_equal(a->queues[0], "vibey.work");
    const rp_channel_sample *b = find(&l, "c3 (2)");
    assert_non_null(b);
    assert_int_equal(b->acked_total, 0); /* never acked: no message_stats */
    assert_int_equal(b->unacked, 3);
    assert_int_equal(b->n_queues, 2); /* "x" is on another vhost: not its own */
    assert_string_equal(b->queues[0], "a");
    assert_string_equal(b->queues[1], "b");
    rp_mgmt_channels_free(c);
}

static void test_bare_array_and_errors(void **state) {
    (void)state;
    rp_mgmt_channels *c = rp_mgmt_channels_new();
    size_t pages = 0;
    char err[200] = "";
    static const char ARR[] = "[{\"name\":\"n (1)\",\"vhost\":\"/\",\"messages_unacknowledged\":2,"
                              "\"message_stats\":{\"ack\":41}}]";
    assert_int_equal(rp_mgmt_channels_add_page(c, ARR, sizeof ARR - 1, &pages, err, sizeof err),
                     RP_OK);
    assert_int_equal(pages, 1);
    rp_channel_list l;
    rp_mgmt_channels_view(c, &l);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.channels[0].acked_total, 41);
    assert_int_equal(l.channels[0].n_queues, 0);
    assert_null(l.channels[0].connection);
    assert_int_equal(rp_mgmt_channels_add_page(c, "nope", 4, &pages, err, sizeof err),
                     RP_ERR_INTERNAL);
    assert_true(err[0] != '\0');
    assert_int_equal(rp_mgmt_channels_add_page(c, "{\"x\":1}", 7, &pages, err, sizeof err),
                     RP_ERR_INTERNAL);
    assert_int_equal(rp_mgmt_channels_add_consumers(c, "{}", 2, err, sizeof err),
                     RP_ERR_INTERNAL);
    rp_mgmt_channels_free(c);
    rp_mgmt_channels_free(NULL);
}

static void test_tags(void **state) {
    (void)state;
#define SEES(s) rp_mgmt_sees_every_channel(s, strlen(s))
    assert_true(SEES("{\"name\":\"reaper\",\"tags\":[\"administrator\"]}"));
    assert_true(SEES("{\"name\":\"r\",\"tags\":[\"policymaker\",\"monitoring\"]}"));
    assert_false(SEES("{\"name\":\"r\",\"tags\":[\"management\",\"policymaker\"]}"));
    assert_true(SEES("{\"name\":\"r\",\"tags\":\"policymaker, monitoring\"}"));
    assert_false(SEES("{\"name\":\"r\",\"tags\":\"management,monitoringx\"}"));
    assert_false(SEES("{\"name\":\"r\",\"tags\":[]}"));
    assert_false(SEES("not json"));
#undef SEES
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_and_join),
        cmocka_unit_test(test_bare_array_and_errors),
        cmocka_unit_test(test_tags),
    };
    return cmocka_run_group_tests_name("mgmt_channels", tests, NULL, NULL);
}
