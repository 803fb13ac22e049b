#!/usr/bin/env python3
"""Checks the Helm chart (helm/reaper) without a helm binary.

    check_chart.py SOURCE_DIR

  - every non-template file of the chart parses (YAML, JSON);
  - the templates are balanced: {{ }} pairs, and every if/with/range/define
    block has its end;
  - values.schema.json is a valid draft-07 schema, values.yaml validates
    against it, and a set of bad values (one change each) is refused;
  - every .Values path a template uses exists in values.yaml, and every
    value in values.yaml is used by some template (no dead values);
  - config (reaper.yaml) holds exactly the keys of reaperd's config table
    (core/rp_config.c) that a file may set, with the table's defaults
    except where the chart deliberately differs, and the ConfigMap renders
    the whole of it;
  - the chart's README documents every value (its table's keys are exactly
    the flattened values.yaml keys);
  - the dashboard and the alert rules use only the metrics reaperd exports;
  - the probes, the security context, the broker conf.d snippet and the
    Service are as the issue asks.
Prints one line per check; exit 1 when any failed.
"""
import copy
import json
import os
import re
import sys

import jsonschema
import yaml

failures = []


def ok(msg):
    print("ok   " + msg)


def fail(msg):
    print("FAIL " + msg)
    failures.append(msg)


def check(cond, msg, detail=""):
    if cond:
        ok(msg)
    else:
        fail(msg + (": " + detail if detail else ""))
    return cond


# The metrics reaperd exports (CONTRACT section 7 and the issue).
METRICS = {
    "reaper_build_info", "reaper_up", "reaper_reaped_total", "reaper_sightings_open",
    "reaper_dead_letters_parked_total", "reaper_gates_open", "reaper_gates_answered_total",
    "reaper_pass_duration_seconds", "reaper_event_lag_seconds",
    "reaper_control_requests_total", "reaper_passes_total", "reaper_feed_publish_failures_total",
    "reaper_feed_published_total", "reaper_reconnects_total", "reaper_oldest_open_gate_age_seconds",
    "reaper_last_successful_pass_timestamp_seconds", "reaper_tap_held_bytes", "reaper_tap_paused",
    "reaper_tap_park_delay_seconds", "reaper_policy_verified",
}
# Every metric the issue asks the dashboard to show (#16 item 5).
DASHBOARD_METRICS = METRICS | {
    "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
    "process_max_fds", "process_start_time_seconds",
}

# Where the chart's config differs from reaperd's built-in default, and why.
CHART_DEFAULTS = {
    "broker.url": "a broker in the cluster, not 127.0.0.1",
    "broker.management_url": "likewise",
    "broker.password_file": "where the chart mounts secrets.broker",
    "store.dsn": "a database in the cluster, not 127.0.0.1",
    "http.listen": "in a pod reaperd must listen on every address",
    "control.allowed_users": "only the reaper user itself, not every user of a shared broker",
}


def flatten(tree, schema=None, prefix=""):
    """Leaf paths of a values tree. A map is walked into when the schema
    declares its keys (properties); a free-form map (labels, annotations,
    resources, a security context) is one value, as is any list."""
    out = {}
    props = (schema or {}).get("properties") if schema is not None else None
    for k, v in tree.items():
        path = prefix + k
        sub = props.get(k) if props else None
        walk = isinstance(v, dict) and v and (schema is None or (sub and "properties" in sub))
        if walk:
            out.update(flatten(v, sub if schema is not None else None, path + "."))
        else:
            out[path] = v
    return out


def lookup(tree, path):
    node = tree
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def config_table(src):
    """{key: (default as written in C, flags)} from core/rp_config.c."""
    text = open(os.path.join(src, "core", "rp_config.c"), encoding="utf-8").read()
    body = text[text.index("rp_config_rows[") :]
    body = body[: body.index("};")]
    rows = {}
    for chunk in body.split("ROW(")[1:]:
        m = re.match(r'\s*RP_CFG_\w+,\s*"([^"]+)",\s*(\w+),\s*"((?:[^"\\]|\\.)*)"', chunk)
        if not m:
            continue
        default = m.group(3).encode().decode("unicode_escape")
        rows[m.group(1)] = (m.group(2), default, chunk)
    return rows


def as_env(value):
    """A YAML value written as reaperd's table writes defaults."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    src = sys.argv[1]
    chart = os.path.join(src, "helm", "reaper")
    tdir = os.path.join(chart, "templates")

    # --- every non-template file parses ----------------------------------
    docs = {}
    for base, _, files in os.walk(chart):
        if os.path.abspath(base).startswith(os.path.abspath(tdir)):
            continue
        for f in sorted(files):
            p = os.path.join(base, f)
            rel = os.path.relpath(p, chart)
            try:
                if f.endswith((".yaml", ".yml")):
                    docs[rel] = yaml.safe_load(open(p, encoding="utf-8"))
                elif f.endswith(".json"):
                    docs[rel] = json.load(open(p, encoding="utf-8"))
                else:
                    continue
                ok("parses: " + rel)
            except (yaml.YAMLError, ValueError) as e:
                fail("parses: %s: %s" % (rel, e))
    for need in ("Chart.yaml", "values.yaml", "values.schema.json", "files/dashboard.json"):
        if need not in docs:
            fail("missing or unparsable: " + need)
    if failures:
        sys.exit(1)
    values, schema, meta = docs["values.yaml"], docs["values.schema.json"], docs["Chart.yaml"]
    check(meta.get("apiVersion") == "v2" and meta.get("name") == "reaper"
          and re.fullmatch(r"\d+\.\d+\.\d+", str(meta.get("version", ""))),
          "Chart.yaml: apiVersion v2, name reaper, a SemVer version")

    # --- the templates ----------------------------------------------------
    templates = {}
    for f in sorted(os.listdir(tdir)):
        templates[f] = open(os.path.join(tdir, f), encoding="utf-8").read()
    for f, t in templates.items():
        opens, closes = t.count("{{"), t.count("}}")
        depth, bad = 0, []
        for action in re.findall(r"{{-?\s*(.*?)\s*-?}}", t, re.S):
            word = action.split()[0] if action.split() else ""
            if word in ("if", "with", "range", "define", "block"):
                depth += 1
            elif word == "end":
                depth -= 1
                if depth < 0:
                    bad.append("an end without a block")
        check(opens == closes and depth == 0 and not bad,
              "balanced actions and blocks: templates/" + f,
              "%d {{, %d }}, %d blocks left open %s" % (opens, closes, depth, bad))
    alltext = "\n".join(templates.values())

    # --- the schema -------------------------------------------------------
    V = jsonschema.Draft7Validator
    try:
        V.check_schema(schema)
        ok("values.schema.json is a valid draft-07 schema")
    except jsonschema.SchemaError as e:
        fail("values.schema.json is a valid draft-07 schema: %s" % e.message)
    errs = sorted(V(schema).iter_errors(values), key=str)
    check(not errs, "values.yaml validates against values.schema.json",
          "; ".join("%s: %s" % ("/".join(map(str, e.path)), e.message) for e in errs))
    # Helm adds "global" before it validates.
    with_global = dict(values, **{"global": {}})
    check(V(schema).is_valid(with_global), "values with Helm's global: {} validate")

    def mutate(path, value):
        v = copy.deepcopy(values)
        node = v
        parts = path.split(".")
        for p in parts[:-1]:
            node = node[p]
        node[parts[-1]] = value
        return v

    bad_values = [
        ("config.reap.dead_letter_peek_limit", 0),
        ("config.reap.dead_letter_peek_limit", 1001),
        ("config.reap.lease_grace_seconds", -1),
        ("config.reap.lease_grace_seconds", 86401),
        ("config.reap.interval_seconds", 0),
        ("config.reap.interval_seconds", 1.5),
        ("config.reap.interval_seconds", True),
        ("config.reap.policy_priority", -1),
        ("config.reap.delivery_limit", 0),
        ("config.reap.owned_queue_pattern", ""),
        ("config.reap.enabled", "yes"),
        ("config.reap.unknown_key", 1),
        ("config.broker.url", "amqp://reaper:secret@rabbitmq:5672/%2f"),
        ("config.broker.management_url", "http://reaper:secret@rabbitmq:15672"),
        ("config.store.dsn", "host=postgresql dbname=vibey user=reaper password=secret"),
        ("config.store.dsn", "postgresql://reaper:secret@postgresql/vibey"),
        ("config.store.schema", "Robert'); DROP"),
        ("config.log.level", "verbose"),
        ("config.log.format", "xml"),
        ("config.broker.events_format", "JSON"),
        ("config.broker.events_format", "protobuf"),
        ("config.http.listen", "9464"),
        ("config.control.allowed_users", "alice"),
        ("replicaCount", "two"),
        ("image.pullPolicy", "Sometimes"),
        ("secrets.broker.key", ""),
        ("prometheusRule.sightingOpenFor", "an hour"),
        ("brokerConfd.fileName", "../rabbitmq.conf"),
        ("brokerConfd.enabled", True),  # broker-wide: refused without acknowledgeBrokerWide
        ("extraEnv", [{"value": "no name"}]),
        ("extraEnv", [{"name": "X", "value": 1}]),
        ("extraEnv", {"X": "1"}),
        ("extraEnvFrom", [{}]),
        ("extraVolumes", [{"name": "ca"}]),
        ("extraVolumes", [{"name": "Bad_Name", "secret": {"secretName": "s"}}]),
        ("extraVolumeMounts", [{"name": "ca"}]),
        ("extraVolumeMounts", [{"name": "ca", "mountPath": "relative"}]),
        ("podAntiAffinityPreset", "sometimes"),
        ("prometheusRule.alerts.gateAge.maxAgeSeconds", "1d"),
        ("prometheusRule.alerts.down.enabled", "yes"),
        ("prometheusRule.alerts.surprise", {"enabled": True, "severity": "x"}),
        ("prometheusRule.runbookBaseUrl", "README.md"),
        ("prometheusRule.additionalRules", [{"alert": "X"}]),
        ("service.port", 70000),
        ("surprise", 1),
    ]
    for path, value in bad_values:
        check(not V(schema).is_valid(mutate(path, value)),
              "the schema refuses %s = %r" % (path, value))
    # And a good change passes (the refusals above are not a schema that
    # refuses everything).
    good = mutate("config.control.allowed_users", ["alice", "ops"])
    good = dict(good, secrets={"broker": {"existingSecret": "rabbitmq-reaper", "key": "password"},
                               "store": {"existingSecret": "pg-reaper", "key": "pw"}})
    check(V(schema).is_valid(good), "the schema accepts allowed users and named Secrets")
    check(values["brokerConfd"]["enabled"] is False,
          "the broker-wide conf.d snippet is off by default (a shared broker)")
    # Empty means reaperd's own broker user only (the one in broker.url):
    # whatever that user is named, only reaper itself (reaperctl in its pod)
    # may send control requests by default.
    check(values["config"]["control"]["allowed_users"] == [],
          "control.allowed_users is empty by default: reaperd's own broker user only")
    ack = mutate("brokerConfd.enabled", True)
    ack["brokerConfd"]["acknowledgeBrokerWide"] = True
    check(V(schema).is_valid(ack), "the schema accepts the snippet with acknowledgeBrokerWide: true")
    extra = copy.deepcopy(values)
    extra.update(extraEnv=[{"name": "PGSSLROOTCERT", "value": "/run/tls/ca.crt"},
                           {"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                 extraEnvFrom=[{"secretRef": {"name": "reaper-env"}}],
                 extraVolumes=[{"name": "tls", "secret": {"secretName": "reaper-tls"}}],
                 extraVolumeMounts=[{"name": "tls", "mountPath": "/run/tls", "readOnly": True}])
    check(V(schema).is_valid(extra), "the schema accepts extraEnv, extraEnvFrom, extraVolumes, extraVolumeMounts",
          [e.message for e in V(schema).iter_errors(extra)])

    # --- .Values paths ----------------------------------------------------
    used = set()
    for f, t in templates.items():
        for m in re.finditer(r"\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)", t):
            path = m.group(1)[1:]
            used.add(path)
            check(lookup(values, path), "templates/%s: .Values.%s exists in values.yaml" % (f, path))
    flat = flatten(values, schema)
    for leaf in sorted(flat):
        covered = any(leaf == u or leaf.startswith(u + ".") for u in used)
        check(covered, "values.yaml: %s is used by a template" % leaf)

    # --- config against reaperd's table -------------------------------------
    table = config_table(src)
    check(len(table) >= 25, "read reaperd's config table (%d keys)" % len(table))
    file_keys = {k for k, (_, _, chunk) in table.items() if "RP__CFG_ENV_ONLY" not in chunk}
    cfg = flatten(values["config"])
    missing = sorted(file_keys - set(cfg))
    extra = sorted(set(cfg) - file_keys)
    check(not missing, "config holds every key reaperd reads from a file", ", ".join(missing))
    check(not extra, "config holds no key reaperd does not know (it would refuse it)",
          ", ".join(extra))
    for key in sorted(file_keys & set(cfg)):
        _, default, _ = table[key]
        if key in CHART_DEFAULTS:
            ok("config.%s differs from reaperd's default on purpose (%s)" % (key, CHART_DEFAULTS[key]))
        else:
            check(as_env(cfg[key]) == default, "config.%s = reaperd's default %r" % (key, default),
                  "chart has %r" % (cfg[key],))
    for key in sorted(k for k in table if k not in file_keys):
        check("config." + key not in flat, "config has no env-only secret key %s" % key)
    helpers = templates.get("_helpers.tpl", "")
    cm = templates.get("configmap.yaml", "")
    check(re.search(r'define "reaper\.configYaml"\s*-?}}\s*{{-?\s*toYaml \.Values\.config\s*}}', helpers)
          and 'include "reaper.configYaml"' in cm and "reaper.yaml: |" in cm,
          "the ConfigMap renders the whole of .Values.config as reaper.yaml")
    dep = templates.get("deployment.yaml", "")
    check('checksum/config: {{ include "reaper.configYaml" . | sha256sum }}' in dep,
          "a changed reaper.yaml restarts the pods (checksum/config)")

    # --- README documents every value ---------------------------------------
    readme = open(os.path.join(chart, "README.md"), encoding="utf-8").read()
    m = re.search(r"^## Values\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    table = m.group(1) if m else ""
    rows = re.findall(r"^\|\s*`([A-Za-z0-9_.\-/]+)`\s*\|\s*`(.*?)`\s*\|", table, re.M)
    documented = {k for k, _ in rows}
    for key, shown in rows:
        if key not in flat:
            continue
        shown = shown.replace("\\|", "|")
        try:
            value = shown[1:-1] if shown.startswith("'") else json.loads(shown)
        except ValueError:
            value = "<unreadable: %s>" % shown
        check(value == flat[key], "README.md shows the default of %s" % key,
              "README %r, values.yaml %r" % (value, flat[key]))
    undocumented = sorted(set(flat) - documented)
    unknown = sorted(documented - set(flat))
    check(not undocumented, "README.md documents every value", ", ".join(undocumented))
    check(not unknown, "README.md documents no value that values.yaml lacks", ", ".join(unknown))
    for section in ("Deploying", "Two replicas", "The broker side", "Values"):
        check(re.search(r"^#+ .*" + section, readme, re.M) is not None,
              "README.md has a section on " + section)

    # --- metrics ----------------------------------------------------------
    def metric_names(text):
        names = set()
        for n in re.findall(r"\breaper_[a-z_]+\b", text):
            names.add(re.sub(r"_(bucket|sum|count)$", "", n))
        return names
    dash = json.dumps(docs["files/dashboard.json"])
    rules = templates.get("prometheusrule.yaml", "")
    dash_names = metric_names(dash) | set(re.findall(r"\bprocess_[a-z_]+\b", dash))
    check(not (DASHBOARD_METRICS - dash_names), "the dashboard shows every metric reaperd exports",
          ", ".join(sorted(DASHBOARD_METRICS - dash_names)))
    for name, text in (("the dashboard", dash), ("the alert rules", rules)):
        names = metric_names(text)
        names.discard("reaper_yaml")
        unknown_m = sorted(names - METRICS)
        check(names and not unknown_m, name + " uses only metrics reaperd exports",
              ", ".join(unknown_m))
    exprs = [t["expr"] for p in docs["files/dashboard.json"]["panels"] for t in p["targets"]]
    check(all(e.count("(") == e.count(")") and e.count("{") == e.count("}") for e in exprs),
          "dashboard expressions are balanced")
    alerts = {"ReaperDown": ("down", "up{"), "ReaperBackendUnreadable": ("backendDown", "reaper_up"),
              "ReaperNoSuccessfulPass": ("noSuccessfulPass", "reaper_last_successful_pass_timestamp_seconds"),
              "ReaperGateBacklog": ("gateBacklog", "reaper_gates_open"),
              "ReaperGateTooOld": ("gateAge", "reaper_oldest_open_gate_age_seconds"),
              "ReaperSightingOpenTooLong": ("sightingOpen", "reaper_sightings_open"),
              "ReaperJobStalled": ("stalled", 'reaper_sightings_open{'),
              "ReaperWaitingDepth": ("waitingDepth", 'reaper_sightings_open{'),
              "ReaperQueueWedged": ("wedged", 'reaper_sightings_open{'),
              "ReaperWedgeRestartLoop": ("wedgeRestartLoop", "reaper_reaped_total{"),
              "ReaperDivergentQueue": ("divergent", 'reaper_sightings_open{'),
              "ReaperFeedFailures": ("feedFailures", "reaper_feed_publish_failures_total"),
              "ReaperReplicasNotReady": ("replicasNotReady", "reaper_up"),
              "ReaperPolicyNotVerified": ("policyNotVerified", "reaper_policy_verified")}
    check(sorted(re.findall(r"- alert: (\w+)", rules)) == sorted(alerts), "the chart's alerts",
          re.findall(r"- alert: (\w+)", rules))
    for alert, (value, needle) in alerts.items():
        m = re.search(r"(\{\{-? if[^}]*\$a\.(\w+)\.enabled[^}]*\}\}\s*(?:\{\{[^}]*\}\}\s*)?- alert: %s\n.*?)(?=\{\{-? end|\Z)" % alert, rules, re.S)
        check(m is not None and m.group(2) == value and needle in m.group(1),
              "alert %s is switched by prometheusRule.alerts.%s.enabled and watches %s" % (alert, value, needle))
        check(m is not None and 'runbook_url: "{{ $runbook }}#%s"' % alert.lower() in m.group(1)
              and re.search(r"^### %s$" % alert, readme, re.M) is not None,
              "alert %s has a runbook_url to its section of README.md" % alert)
    check("toYaml . | nindent 8" in rules and ".Values.prometheusRule.additionalRules" in rules,
          "prometheusRule.additionalRules are appended to the group")

    # --- what the issue asks of the objects -----------------------------------
    check("path: /healthz" in dep and "path: /readyz" in dep,
          "liveness on /healthz, readiness on /readyz")
    check(re.search(r"livenessProbe:\s*\n\s*httpGet:\s*\n\s*path: /healthz", dep) is not None
          and re.search(r"readinessProbe:\s*\n\s*httpGet:\s*\n\s*path: /readyz", dep) is not None,
          "the right probe on the right path")
    psc, sc = values["podSecurityContext"], values["securityContext"]
    check(psc.get("runAsNonRoot") is True and int(psc.get("runAsUser", 0)) > 0,
          "pods run as a non-root user")
    check(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
          and "ALL" in sc.get("capabilities", {}).get("drop", []),
          "containers: read-only root, no privilege escalation, no capabilities")
    check("toYaml .Values.securityContext" in dep and "toYaml .Values.podSecurityContext" in dep
          and "toYaml .Values.resources" in dep, "the Deployment applies security context and resources")
    check("secretKeyRef" in dep and "name: PGPASSWORD" in dep and "secretName: {{ $brokerSecret }}" in dep,
          "passwords come from Secret references (PGPASSWORD, the broker password file)")
    check("--migrate" in dep, "reaperd --migrate runs before reaperd (initContainer)")
    check("publishNotReadyAddresses: true" in templates.get("service.yaml", ""),
          "the metrics Service keeps unready pods (reaper_up 0 must be scraped)")
    confd = templates.get("broker-confd.yaml", "")
    check("consumer_timeout = %d" in confd
          and "mul (int64 .Values.config.reap.consumer_timeout_seconds) 1000" in confd,
          "the broker conf.d snippet renders consumer_timeout in ms from reap.consumer_timeout_seconds")
    check("restart-checksum" in confd and "sha256sum" in confd,
          "the broker conf.d ConfigMap carries its restart-on-change checksum")
    for name, flag in (("servicemonitor.yaml", "serviceMonitor.enabled"),
                       ("prometheusrule.yaml", "prometheusRule.enabled"),
                       ("grafana-dashboard.yaml", "grafanaDashboard.enabled"),
                       ("broker-confd.yaml", "brokerConfd.enabled")):
        check(templates.get(name, "").lstrip().startswith("{{- if .Values.%s }}" % flag),
              "templates/%s is optional (%s)" % (name, flag))

    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
