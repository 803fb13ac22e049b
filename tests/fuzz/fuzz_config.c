/*
 * fuzz_config - libFuzzer entry for the configuration loader.
 *
 * Input: a YAML document, optionally followed by a NUL byte and
 * newline-separated "NAME=value" environment entries. The document goes
 * through rp_config_load_yaml_buffer, the entries through
 * rp_config_apply_env, then rp_config_validate and rp_config_format, as
 * `reaperd --check-config` would.
 *
 * Checked beyond "no crash, no leak, no UB":
 *   - every problem has a message, and the count adds up;
 *   - a config accepted without problems formats to YAML that loads back,
 *     without problems, to the same values (the password line dropped:
 *     a file may not hold it).
 * Seeds: tests/fuzz/corpus/config/ (keep inputs that once crashed there,
 * renamed: crash-* is ignored by git).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rp_config.h"
#include "rp_config_load.h"

#define MAX_ENV 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Removes the "  # ..." comments, which say where values came from. */
static void strip_comments(char *s) {
    for (char *c = s; (c = strstr(c, "  # ")) != NULL;) {
        char *e = strchr(c, '\n');
        if (e == NULL) {
            *c = '\0';
            break;
        }
        memmove(c, e, strlen(e) + 1);
    }
}

static void check_problems(const rp_config_problems *p) {
    if (p->n > RP_CONFIG_PROBLEMS_MAX) abort();
    for (size_t i = 0; i < p->n; i++)
        if (p->items[i].message == NULL || p->items[i].message[0] == '\0') abort();
}

/* The formatted config must load back to itself. */
static void check_round_trip(const rp_config *cfg) {
    char *text = NULL;
    if (rp_config_format(cfg, &text, NULL) != RP_OK) return;
    char *pw = strstr(text, "\n  password: ");
    if (pw == NULL) abort();
    char *eol = strchr(pw + 1, '\n');
    if (eol == NULL) abort();
    memmove(pw, eol, strlen(eol) + 1);

    rp_config back;
    rp_config_problems p;
    rp_config_problems_init(&p);
    if (rp_config_init(&back) != RP_OK) abort();
    rp_status st = rp_config_load_yaml_buffer(text, strlen(text), "formatted.yaml", &back, &p,
                                              NULL);
    if (st == RP_OK) st = rp_config_validate(&back, &p);
    if (st != RP_OK && st != RP_ERR_NOMEM) abort(); /* the formatter wrote what we refuse */
    if (st == RP_OK) {
        /* Same values: compare the listings without origins, the password
         * blanked on both sides. */
        rp_config same = *cfg;
        same.broker.password = (char *)"";
        char *a = NULL, *b = NULL;
        if (rp_config_format(&same, &a, NULL) == RP_OK &&
            rp_config_format(&back, &b, NULL) == RP_OK) {
            strip_comments(a);
            strip_comments(b);
            if (strcmp(a, b) != 0) abort();
        }
        free(a);
        free(b);
    }
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t ylen = nul ? (size_t)(nul - data) : size;

    rp_config cfg;
    rp_config_problems p;
    rp_config_problems_init(&p);
    if (rp_config_init(&cfg) != RP_OK) abort();

    bool malformed = false;
    rp_status st = rp_config_load_yaml_buffer(data, ylen, "fuzz.yaml", &cfg, &p, &malformed);
    if (st == RP_OK && rp_config_problems_count(&p) != 0) abort();

    char *envbuf = NULL;
    char *envp[MAX_ENV + 1];
    size_t n_env = 0;
    if (nul != NULL) {
        size_t elen = size - ylen - 1;
        envbuf = malloc(elen + 1);
        if (envbuf == NULL) abort();
        memcpy(envbuf, nul + 1, elen);
        envbuf[elen] = '\0'; /* an inner NUL just ends that entry early */
        for (char *s = envbuf; s != NULL && *s && n_env < MAX_ENV;) {
            char *nl = strchr(s, '\n');
            if (nl) *nl = '\0';
            envp[n_env++] = s;
            s = nl ? nl + 1 : NULL;
        }
    }
    envp[n_env] = NULL;
    rp_status est = rp_config_apply_env(&cfg, envp, &p);
    if (est == RP_OK && st == RP_OK && rp_config_problems_count(&p) != 0) abort();

    if (!malformed) {
        size_t before = rp_config_problems_count(&p);
        rp_status vst = rp_config_validate(&cfg, &p);
        if ((vst == RP_OK) != (rp_config_problems_count(&p) == before) && vst != RP_ERR_NOMEM)
            abort();
        if (vst == RP_OK && st == RP_OK && est == RP_OK) check_round_trip(&cfg);
    }
    check_problems(&p);

    char *text = NULL;
    if (rp_config_format(&cfg, &text, NULL) == RP_OK) free(text);

    free(envbuf);
    rp_config_problems_cleanup(&p);
    rp_config_cleanup(&cfg);
    return 0;
}
