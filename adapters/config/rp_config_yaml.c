/*
 * rp_config_yaml.c - the YAML file, read with libyaml's event parser (never
 * its document loader: aliases are refused as events, so nothing is ever
 * expanded and memory stays proportional to the input). Keys are matched
 * against core's table; values are handed to rp_config_set_scalar /
 * rp_config_set_list with their line and column.
 */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "rp_config.h"
#include "rp_config_load.h"

/* Sections seen in one file, for duplicate sections. */
#define RP_MAX_SECTIONS 16

typedef struct rp_yaml {
    yaml_parser_t parser;
    yaml_event_t ev;
    bool have_ev;
    const char *name;
    const unsigned char *data; /* the document, for a reader error's line */
    size_t len;
    rp_config *cfg;
    rp_config_problems *p;
    bool malformed; /* the YAML itself is broken: stop */
    bool nomem;
    bool seen[RP_CFG_KEY_COUNT_];
    rp_config_origin seen_at[RP_CFG_KEY_COUNT_];
    char *sections[RP_MAX_SECTIONS];
    rp_config_origin sections_at[RP_MAX_SECTIONS];
    size_t n_sections;
} rp_yaml;

static rp_config_origin rp_origin_of(yaml_mark_t m) {
    rp_config_origin o = {RP_CONFIG_FILE, (unsigned)m.line + 1, (unsigned)m.column + 1};
    return o;
}

static const char *rp_where(const rp_yaml *y, rp_config_origin o, char *buf, size_t cap) {
    return rp_config_where(y->cfg, RP_CFG_KEY_COUNT_, o, buf, cap);
}

/* Reports the parser's error, once. */
static void rp_yaml_error(rp_yaml *y) {
    yaml_parser_t *ps = &y->parser;
    char where[512];
    y->malformed = true;
    if (ps->error == YAML_MEMORY_ERROR) {
        y->nomem = true;
        return;
    }
    rp_config_problems_cleanup(y->p); /* see rp_config_load_yaml_buffer */
    const char *problem = ps->problem ? ps->problem : "unknown error";
    if (ps->error == YAML_READER_ERROR) {
        /* The reader gives a byte offset only: count the lines to it. */
        size_t off = ps->problem_offset < y->len ? ps->problem_offset : y->len;
        rp_config_origin at = {RP_CONFIG_FILE, 1, 1};
        for (size_t i = 0; i < off; i++) {
            if (y->data[i] == '\n') {
                at.line++;
                at.column = 1;
            } else {
                at.column++;
            }
        }
        rp_where(y, at, where, sizeof where);
        if (ps->problem_value >= 0)
            rp_config_problems_add(y->p, NULL, where, "malformed YAML: %s (byte 0x%02x)",
                                   problem, (unsigned)ps->problem_value & 0xffu);
        else
            rp_config_problems_add(y->p, NULL, where, "malformed YAML: %s", problem);
        return;
    }
    rp_where(y, rp_origin_of(ps->problem_mark), where, sizeof where);
    if (ps->context != NULL)
        rp_config_problems_add(y->p, NULL, where, "malformed YAML: %s (%s at line %zu column %zu)",
                               problem, ps->context, (size_t)ps->context_mark.line + 1,
                               (size_t)ps->context_mark.column + 1);
    else
        rp_config_problems_add(y->p, NULL, where, "malformed YAML: %s", problem);
}

/* Moves to the next event. False when the YAML is broken (reported). */
static bool rp_next(rp_yaml *y) {
    if (y->have_ev) {
        yaml_event_delete(&y->ev);
        y->have_ev = false;
    }
    if (y->malformed || y->nomem) return false;
    if (!yaml_parser_parse(&y->parser, &y->ev)) {
        rp_yaml_error(y);
        return false;
    }
    y->have_ev = true;
    return true;
}

/* Skips the rest of a node whose start event is the current one. */
static bool rp_skip_started(rp_yaml *y) {
    yaml_event_type_t t = y->ev.type;
    if (t != YAML_MAPPING_START_EVENT && t != YAML_SEQUENCE_START_EVENT) return true;
    size_t depth = 1;
    while (depth > 0) {
        if (!rp_next(y)) return false;
        switch (y->ev.type) {
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            depth++;
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            depth--;
            break;
        default:
            break;
        }
    }
    return true;
}

/* Skips the next node whole. */
static bool rp_skip_node(rp_yaml *y) {
    if (!rp_next(y)) return false;
    return rp_skip_started(y);
}

static const char *rp_shape(const yaml_event_t *ev) {
    switch (ev->type) {
    case YAML_MAPPING_START_EVENT: return "a mapping";
    case YAML_SEQUENCE_START_EVENT: return "a list";
    case YAML_ALIAS_EVENT: return "an alias (aliases are not supported)";
    case YAML_SCALAR_EVENT: return "a single value";
    default: return "something else";
    }
}

static bool rp_is_plain_null(const yaml_event_t *ev) {
    if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
        ev->data.scalar.tag != NULL)
        return false;
    const char *v = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    return n == 0 || (n == 1 && v[0] == '~') || (n == 4 && (memcmp(v, "null", 4) == 0 ||
                                                           memcmp(v, "Null", 4) == 0 ||
                                                           memcmp(v, "NULL", 4) == 0));
}

static void rp_status_into(rp_yaml *y, rp_status st) {
    if (st == RP_ERR_NOMEM) y->nomem = true;
}

/* The current event starts a list for key id: collects its scalars. */
static void rp_parse_list(rp_yaml *y, rp_config_key_id id, rp_config_origin at) {
    char **items = NULL;
    size_t *lens = NULL, n = 0, cap = 0;
    bool bad = false;
    for (;;) {
        if (!rp_next(y)) goto out;
        if (y->ev.type == YAML_SEQUENCE_END_EVENT) break;
        rp_config_origin o = rp_origin_of(y->ev.start_mark);
        if (y->ev.type != YAML_SCALAR_EVENT || y->ev.data.scalar.tag != NULL) {
            rp_config_refuse_shape(y->cfg, id,
                                   y->ev.type == YAML_SCALAR_EVENT ? "a tagged item (YAML tags "
                                                                     "are not supported)"
                                   : y->ev.type == YAML_ALIAS_EVENT
                                       ? "an alias in the list (aliases are not supported)"
                                       : "a list holding a mapping or a list",
                                   o, y->p);
            bad = true;
            if (!rp_skip_started(y)) goto out;
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            char **ni = realloc(items, ncap * sizeof *ni);
            if (ni == NULL) goto nomem;
            items = ni;
            size_t *nl = realloc(lens, ncap * sizeof *nl);
            if (nl == NULL) goto nomem;
            lens = nl;
            cap = ncap;
        }
        size_t len = rp_is_plain_null(&y->ev) ? 0 : y->ev.data.scalar.length;
        items[n] = malloc(len + 1);
        if (items[n] == NULL) goto nomem;
        memcpy(items[n], y->ev.data.scalar.value, len);
        items[n][len] = '\0';
        lens[n++] = len;
    }
    if (!bad)
        rp_status_into(y, rp_config_set_list(y->cfg, id, (const char *const *)items, lens, n,
                                             at, y->p));
    goto out;
nomem:
    y->nomem = true;
out:
    for (size_t i = 0; i < n; i++) free(items[i]);
    free(items);
    free(lens);
}

/* The next node is the value of leaf key id. */
static void rp_parse_value(rp_yaml *y, rp_config_key_id id) {
    if (!rp_next(y)) return;
    rp_config_origin at = rp_origin_of(y->ev.start_mark);
    switch (y->ev.type) {
    case YAML_SCALAR_EVENT:
        if (y->ev.data.scalar.tag != NULL) {
            rp_config_refuse_shape(y->cfg, id, "a tagged value (YAML tags are not supported)",
                                   at, y->p);
            return;
        }
        rp_status_into(y, rp_config_set_scalar(
                              y->cfg, id, (const char *)y->ev.data.scalar.value,
                              y->ev.data.scalar.length,
                              y->ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE, at, y->p));
        return;
    case YAML_SEQUENCE_START_EVENT:
        if (rp_config_key_type(id) == RP_CFG_TYPE_STRLIST) {
            rp_parse_list(y, id, at);
            return;
        }
        rp_config_refuse_shape(y->cfg, id, "a list", at, y->p);
        rp_skip_started(y);
        return;
    default:
        rp_config_refuse_shape(y->cfg, id, rp_shape(&y->ev), at, y->p);
        rp_skip_started(y);
        return;
    }
}

/* Whether a section was already given in this file; records it if not. */
static bool rp_section_seen(rp_yaml *y, const char *path, rp_config_origin at,
                            rp_config_origin *first) {
    for (size_t i = 0; i < y->n_sections; i++) {
        if (strcmp(y->sections[i], path) == 0) {
            *first = y->sections_at[i];
            return true;
        }
    }
    if (y->n_sections < RP_MAX_SECTIONS) {
        char *copy = strdup(path);
        if (copy == NULL) {
            y->nomem = true;
            return false;
        }
        y->sections_at[y->n_sections] = at;
        y->sections[y->n_sections++] = copy;
    }
    return false;
}

static void rp_parse_mapping(rp_yaml *y, const char *prefix);

/* The next node is the value of section path. */
static void rp_parse_section(rp_yaml *y, const char *path) {
    if (!rp_next(y)) return;
    if (y->ev.type == YAML_MAPPING_START_EVENT) {
        rp_parse_mapping(y, path);
        return;
    }
    if (rp_is_plain_null(&y->ev)) return; /* "control:" with nothing under it */
    char where[512];
    rp_where(y, rp_origin_of(y->ev.start_mark), where, sizeof where);
    rp_config_problems_add(y->p, path, where, "is a section: expects a mapping, got %s",
                           rp_shape(&y->ev));
    rp_skip_started(y);
}

/* The current event started a mapping at prefix ("" for the root). */
static void rp_parse_mapping(rp_yaml *y, const char *prefix) {
    char where[512];
    for (;;) {
        if (!rp_next(y)) return;
        if (y->ev.type == YAML_MAPPING_END_EVENT) return;
        rp_config_origin kat = rp_origin_of(y->ev.start_mark);
        if (y->ev.type != YAML_SCALAR_EVENT) {
            rp_where(y, kat, where, sizeof where);
            rp_config_problems_add(y->p, prefix[0] ? prefix : NULL, where,
                                   "a key must be a plain string, got %s",
                                   rp_shape(&y->ev));
            if (!rp_skip_started(y) || !rp_skip_node(y)) return;
            continue;
        }
        const char *key = (const char *)y->ev.data.scalar.value;
        size_t klen = y->ev.data.scalar.length;
        size_t plen = strlen(prefix);
        char *path = malloc(plen + 1 + klen + 1);
        if (path == NULL) {
            y->nomem = true;
            return;
        }
        size_t n = 0;
        if (plen) {
            memcpy(path, prefix, plen);
            path[plen] = '.';
            n = plen + 1;
        }
        memcpy(path + n, key, klen);
        n += klen;
        path[n] = '\0';

        bool plain_key = klen > 0 && memchr(key, '.', klen) == NULL &&
                         memchr(key, '\0', klen) == NULL;
        int id = plain_key ? rp_config_key_lookup(path, n) : -1;
        rp_config_origin first;
        if (plain_key && rp_config_is_section(path, n)) {
            if (rp_section_seen(y, path, kat, &first)) {
                rp_where(y, kat, where, sizeof where);
                rp_config_problems_add(y->p, path, where,
                                       "duplicate section (first at line %u); merge them",
                                       first.line);
                rp_skip_node(y);
            } else {
                rp_parse_section(y, path);
            }
        } else if (id >= 0) {
            if (y->seen[id]) {
                rp_where(y, kat, where, sizeof where);
                rp_config_problems_add(y->p, path, where, "duplicate key (first at line %u)",
                                       y->seen_at[id].line);
                rp_skip_node(y);
            } else {
                y->seen[id] = true;
                y->seen_at[id] = kat;
                rp_parse_value(y, (rp_config_key_id)id);
            }
        } else {
            rp_config_refuse_unknown(y->cfg, path, n, false, kat, y->p);
            rp_skip_node(y);
        }
        free(path);
        if (y->malformed || y->nomem) return;
    }
}

static void rp_parse_stream(rp_yaml *y) {
    char where[512];
    if (!rp_next(y) || y->ev.type != YAML_STREAM_START_EVENT) return;
    if (!rp_next(y)) return;
    if (y->ev.type == YAML_STREAM_END_EVENT) return; /* nothing but comments */
    if (!rp_next(y)) return;                          /* the root node */
    if (y->ev.type == YAML_MAPPING_START_EVENT) {
        rp_parse_mapping(y, "");
    } else if (!rp_is_plain_null(&y->ev)) {
        rp_where(y, rp_origin_of(y->ev.start_mark), where, sizeof where);
        rp_config_problems_add(y->p, NULL, where,
                               "the document is not a mapping (got %s); reaper.yaml holds "
                               "sections such as broker:, store:, reap:",
                               rp_shape(&y->ev));
        if (!rp_skip_started(y)) return;
    }
    if (!rp_next(y)) return; /* DOCUMENT-END */
    if (!rp_next(y)) return;
    if (y->ev.type == YAML_DOCUMENT_START_EVENT) {
        rp_where(y, rp_origin_of(y->ev.start_mark), where, sizeof where);
        rp_config_problems_add(y->p, NULL, where,
                               "a second YAML document: the file must hold exactly one");
    }
}

rp_status rp_config_load_yaml_buffer(const void *data, size_t len, const char *name,
                                     rp_config *cfg, rp_config_problems *problems,
                                     bool *malformed) {
    if (malformed) *malformed = false;
    if (data == NULL && len > 0) return RP_ERR_INVALID;
    if (name == NULL) name = "config";
    if (rp_config_set_path(cfg, name) != RP_OK) return RP_ERR_NOMEM;
    if (len > RP_CONFIG_FILE_MAX) {
        rp_config_problems_add(problems, NULL, name,
                               "the file is %zu bytes; the limit is %d bytes", len,
                               RP_CONFIG_FILE_MAX);
        if (malformed) *malformed = true;
        return RP_ERR_TOO_LARGE;
    }
    /* The document's problems go to a scratch list first: when the YAML
     * turns out broken, only the syntax error is reported, since libyaml
     * hands out the events before the error, and what they seem to say
     * (a "900 delivery_limit" integer) would mislead. */
    rp_config_problems scratch;
    rp_config_problems_init(&scratch);
    size_t before = rp_config_problems_count(problems);
    rp_yaml *y = calloc(1, sizeof *y);
    if (y == NULL) return RP_ERR_NOMEM;
    y->name = name;
    y->data = data;
    y->len = len;
    y->cfg = cfg;
    y->p = &scratch;
    if (!yaml_parser_initialize(&y->parser)) {
        free(y);
        return RP_ERR_NOMEM;
    }
    yaml_parser_set_input_string(&y->parser, data ? data : (const void *)"", len);
    rp_parse_stream(y);
    if (y->have_ev) yaml_event_delete(&y->ev);
    yaml_parser_delete(&y->parser);
    for (size_t i = 0; i < y->n_sections; i++) free(y->sections[i]);
    rp_config_problems_move(problems, &scratch);
    bool nomem = y->nomem || (problems != NULL && problems->nomem);
    if (malformed) *malformed = y->malformed;
    free(y);
    if (nomem) return RP_ERR_NOMEM;
    return rp_config_problems_count(problems) > before ? RP_ERR_CONFIG : RP_OK;
}

rp_status rp_config_read_file(const char *path, size_t max, char **data, size_t *len,
                              rp_config_problems *problems) {
    *data = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO or device must not hang the start; it is refused
     * below as not a regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        rp_config_problems_add(problems, NULL, path, "cannot open the configuration file: %s",
                               strerror(errno));
        return RP_ERR_IO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rp_config_problems_add(problems, NULL, path, "cannot read the configuration file: %s",
                               strerror(errno));
        close(fd);
        return RP_ERR_IO;
    }
    if (S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
        rp_config_problems_add(problems, NULL, path, "cannot read the configuration file: %s",
                               S_ISDIR(st.st_mode) ? strerror(EISDIR)
                                                   : "not a regular file");
        close(fd);
        return RP_ERR_IO;
    }
    if (st.st_size > 0 && (unsigned long long)st.st_size > max) {
        rp_config_problems_add(problems, NULL, path,
                               "the configuration file is %lld bytes; the limit is %zu bytes",
                               (long long)st.st_size, max);
        close(fd);
        return RP_ERR_TOO_LARGE;
    }
    char *buf = malloc(max + 2);
    if (buf == NULL) {
        close(fd);
        return RP_ERR_NOMEM;
    }
    size_t got = 0;
    /* Read one byte past the limit: the file may have grown since fstat. */
    while (got <= max) {
        ssize_t r = read(fd, buf + got, max + 1 - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            rp_config_problems_add(problems, NULL, path,
                                   "cannot read the configuration file: %s", strerror(errno));
            free(buf);
            close(fd);
            return RP_ERR_IO;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got > max) {
        rp_config_problems_add(problems, NULL, path,
                               "the configuration file is over the limit of %zu bytes", max);
        free(buf);
        return RP_ERR_TOO_LARGE;
    }
    buf[got] = '\0';
    *data = buf;
    *len = got;
    return RP_OK;
}

rp_status rp_config_load(const char *path, char *const *envp, rp_config *out,
                         rp_config_problems *problems) {
    rp_status st = rp_config_init(out);
    if (st != RP_OK) return st;
    rp_status result = RP_OK;
    bool malformed = false;
    if (path != NULL) {
        char *data = NULL;
        size_t len = 0;
        st = rp_config_read_file(path, RP_CONFIG_FILE_MAX, &data, &len, problems);
        if (st != RP_OK) return st;
        st = rp_config_load_yaml_buffer(data, len, path, out, problems, &malformed);
        free(data);
        if (st == RP_ERR_NOMEM || st == RP_ERR_TOO_LARGE) return st;
        if (st != RP_OK) result = st;
    }
    st = rp_config_apply_env(out, envp, problems);
    if (st == RP_ERR_NOMEM) return st;
    if (st != RP_OK) result = st;
    if (!malformed) {
        st = rp_config_validate(out, problems);
        if (st == RP_ERR_NOMEM) return st;
        if (st != RP_OK) result = st;
    }
    return result;
}

rp_status rp_config_load_cli(const char *prog, const char *path, char *const *envp,
                             rp_config *out, FILE *f) {
    rp_config_problems problems;
    rp_config_problems_init(&problems);
    rp_status st = rp_config_load(path, envp, out, &problems);
    if (st != RP_OK) {
        for (size_t i = 0; i < problems.n; i++)
            fprintf(f, "%s: %s\n", prog, problems.items[i].message);
        if (problems.omitted) fprintf(f, "%s: ... and %zu more problems\n", prog, problems.omitted);
        if (problems.n == 0)
            fprintf(f, "%s: cannot load the configuration: %s\n", prog, rp_status_string(st));
        size_t n = rp_config_problems_count(&problems);
        fprintf(f, "%s: configuration refused (%zu problem%s)\n", prog, n, n == 1 ? "" : "s");
        rp_config_cleanup(out);
    }
    rp_config_problems_cleanup(&problems);
    return st;
}

extern char **environ;

rp_status rp_config_load_environ(const char *path, rp_config *out, rp_config_problems *problems) {
    return rp_config_load(path, environ, out, problems);
}
