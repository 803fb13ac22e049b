/*
 * config_problems_assert.h - finding a configuration problem in tests
 * (test_config, test_config_load): the problem about a key (NULL: any)
 * whose message contains a needle, and an assert that prints every problem
 * when it fails. Include after cmocka.h. Nothing is allocated.
 */
#ifndef RP_CONFIG_PROBLEMS_ASSERT_H
#define RP_CONFIG_PROBLEMS_ASSERT_H

#include <stdio.h>
#include <string.h>

#include "rp_config.h"

static inline const rp_config_problem *find_problem(const rp_config_problems *p,
                                                    const char *key, const char *needle) {
    for (size_t i = 0; i < p->n; i++) {
        const rp_config_problem *pr = &p->items[i];
        if (key != NULL && (pr->key == NULL || strcmp(pr->key, key) != 0)) continue;
        if (needle == NULL || strstr(pr->message, needle) != NULL) return pr;
    }
    return NULL;
}

static inline void print_problems(const rp_config_problems *p) {
    for (size_t i = 0; i < p->n; i++) fprintf(stderr, "  problem: %s\n", p->items[i].message);
}

#define assert_problem(p, key, needle)                                                   \
    do {                                                                                 \
        if (find_problem((p), (key), (needle)) == NULL) {                                \
            print_problems(p);                                                           \
            fail_msg("no problem for %s containing \"%s\"", (key) ? (key) : "(any)",     \
                     (needle) ? (needle) : "");                                          \
        }                                                                                \
    } while (0)

#endif
