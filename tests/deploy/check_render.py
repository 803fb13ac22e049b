#!/usr/bin/env python3
"""Checks the chart as rendered (by helmrender, see test_chart_render.sh).

    check_render.py HELMRENDER CHART_DIR REAPERD WORK_DIR

Renders the chart for several value sets and checks the manifests: every
document parses; the objects made and not made follow the switches; the
Deployment, Service, ServiceMonitor, PrometheusRule, dashboard and broker
conf.d snippet hold what the chart promises; the reaper.yaml in the
ConfigMap is values.yaml's config and reaperd --check-config accepts it.
Prints one line per check; exit 1 when any failed.
"""
import copy
import shutil
import json
import os
import re
import subprocess
import sys

import yaml

failures = []

ALERTS = ["ReaperBackendUnreadable", "ReaperDivergentQueue", "ReaperDown", "ReaperFeedFailures", "ReaperGateBacklog",
          "ReaperGateTooOld", "ReaperJobStalled", "ReaperNoSuccessfulPass", "ReaperQueueWedged", "ReaperReplicasNotReady",
          "ReaperSightingOpenTooLong", "ReaperWaitingDepth", "ReaperWedgeRestartLoop", "ReaperPolicyNotVerified"]


def check(cond, msg, detail=""):
    print(("ok   " if cond else "FAIL ") + msg + ("" if cond or not detail else ": " + str(detail)))
    if not cond:
        failures.append(msg)
    return cond


SECRETS = {"secrets": {"broker": {"existingSecret": "reaper-broker"},
                       "store": {"existingSecret": "reaper-store", "key": "pg-password"}}}


def render(tool, chart, work, name, overrides, release="reaper", namespace="vibey"):
    path = os.path.join(work, name + ".values.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(overrides, f)
    p = subprocess.run([tool, "-f", path, "-name", release, "-namespace", namespace, chart],
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def docs_of(name, out):
    docs = []
    for i, chunk in enumerate(out.split("\n---\n")):
        try:
            d = yaml.safe_load(chunk)
        except yaml.YAMLError as e:
            check(False, "%s: document %d parses" % (name, i), e)
            continue
        if d is not None:
            docs.append(d)
    return docs


def by_kind(docs):
    res = {}
    for d in docs:
        res.setdefault(d["kind"], []).append(d)
    return res


def one(objs, kind, name=None):
    found = [d for d in objs.get(kind, []) if name is None or d["metadata"]["name"] == name]
    return found[0] if len(found) == 1 else None


def merged(base, over):
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merged(out[k], v)
        else:
            out[k] = v
    return out


def cfg_allowed(docs):
    cm = [d for d in docs if d["kind"] == "ConfigMap" and "reaper.yaml" in d.get("data", {})]
    return yaml.safe_load(cm[0]["data"]["reaper.yaml"])["control"]["allowed_users"] if cm else None


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    tool, chart, reaperd, work = sys.argv[1:]
    values = yaml.safe_load(open(os.path.join(chart, "values.yaml")))
    dashboard = json.load(open(os.path.join(chart, "files", "dashboard.json")))

    # --- no Secret named: refused, naming the value ----------------------
    rc, out, err = render(tool, chart, work, "nosecret", {})
    check(rc != 0 and "secrets.broker.existingSecret" in err,
          "without secrets.broker.existingSecret the chart refuses to render", err.strip()[-200:])
    rc, out, err = render(tool, chart, work, "nostore",
                          {"secrets": {"broker": {"existingSecret": "b"}}})
    check(rc != 0 and "secrets.store.existingSecret" in err,
          "without secrets.store.existingSecret the chart refuses to render", err.strip()[-200:])

    rc, out, err = render(tool, chart, work, "pwclash",
                          merged(SECRETS, {"config": {"broker": {"password_file": "/etc/reaper/pw"}}}))
    check(rc != 0 and "config.broker.password_file" in err,
          "a password file inside the config mount is refused", err.strip()[-200:])

    # --- defaults (plus the two Secrets) -----------------------------------
    rc, out, err = render(tool, chart, work, "defaults", SECRETS)
    if not check(rc == 0, "renders with the default values and two Secrets", err):
        sys.exit(1)
    docs = docs_of("defaults", out)
    objs = by_kind(docs)
    kinds = sorted(d["kind"] for d in docs)
    check(kinds == sorted(["ConfigMap", "Deployment", "PodDisruptionBudget",
                           "Service", "ServiceAccount"]),
          "defaults make the ConfigMap, Deployment, PDB, Service and ServiceAccount only "
          "(no broker-wide conf.d snippet)", kinds)
    for d in docs:
        md = d.get("metadata", {})
        check(md.get("name", "").startswith("reaper") and
              md.get("labels", {}).get("app.kubernetes.io/instance") == "reaper",
              "%s %s is named and labelled for the release" % (d["kind"], md.get("name")))

    dep = one(objs, "Deployment")
    spec = dep["spec"]
    pod = spec["template"]["spec"]
    check(spec["replicas"] == 2, "two replicas by default")
    check(spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items(),
          "the Deployment's selector matches its pods")
    psc = pod["securityContext"]
    check(psc.get("runAsNonRoot") is True and psc.get("runAsUser") == 10001,
          "pods run as non-root user 10001 (the image's)")
    containers = pod["containers"] + pod.get("initContainers", [])
    for c in containers:
        sc = c.get("securityContext", {})
        check(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
              and sc.get("capabilities", {}).get("drop") == ["ALL"],
              "container %s: read-only root, no escalation, no capabilities" % c["name"])
        check(c.get("resources", {}).get("limits", {}).get("memory") == "128Mi",
              "container %s has resources" % c["name"])
        env = {e["name"]: e for e in c.get("env", [])}
        ref = env.get("PGPASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {})
        check(ref == {"name": "reaper-store", "key": "pg-password"},
              "container %s: PGPASSWORD from Secret reaper-store key pg-password" % c["name"], ref)
        check(not any("value" in e and "PASSWORD" in e["name"] for e in c.get("env", [])),
              "container %s: no password given as a literal" % c["name"])
        mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
        check(mounts.get("broker-password", {}).get("mountPath") == "/run/secrets/reaper"
              and mounts["broker-password"].get("readOnly") is True,
              "container %s: the broker password mounted read-only beside password_file" % c["name"])
        check(mounts.get("config", {}).get("mountPath") == "/etc/reaper",
              "container %s: reaper.yaml mounted at /etc/reaper" % c["name"])
        check(c["args"][:2] == ["--config", "/etc/reaper/reaper.yaml"],
              "container %s: reaperd --config /etc/reaper/reaper.yaml" % c["name"], c["args"])
    (main_c,) = [c for c in pod["containers"] if c["name"] == "reaperd"]
    check(pod.get("initContainers", [{}])[0].get("args", [])[-1:] == ["--migrate"],
          "an initContainer runs reaperd --migrate")
    check(main_c["ports"] == [{"name": "http", "containerPort": 9464, "protocol": "TCP"}],
          "reaperd exposes http on 9464, the port of config.http.listen", main_c["ports"])
    check(main_c["livenessProbe"] == dict(values["livenessProbe"],
                                          httpGet={"path": "/healthz", "port": "http"}),
          "liveness probe: GET /healthz with livenessProbe's timings", main_c["livenessProbe"])
    check(main_c["readinessProbe"] == dict(values["readinessProbe"],
                                           httpGet={"path": "/readyz", "port": "http"}),
          "readiness probe: GET /readyz with readinessProbe's timings", main_c["readinessProbe"])
    container_fields = {"name", "image", "imagePullPolicy", "args", "command", "env", "envFrom", "ports",
                        "livenessProbe", "readinessProbe", "startupProbe", "securityContext",
                        "resources", "volumeMounts"}
    check(pod.get("enableServiceLinks") is False,
          "the pod sets enableServiceLinks: false (no REAPER_SERVICE_* from the Service)")
    pod_fields = {"imagePullSecrets", "serviceAccountName", "automountServiceAccountToken",
                  "enableServiceLinks",
                  "terminationGracePeriodSeconds", "securityContext", "initContainers",
                  "containers", "volumes", "nodeSelector", "affinity", "tolerations",
                  "topologySpreadConstraints"}
    for c in containers:
        check(set(c) <= container_fields, "container %s has only container fields" % c["name"],
              sorted(set(c) - container_fields))
    check(set(pod) <= pod_fields, "the pod spec has only pod fields", sorted(set(pod) - pod_fields))
    check(set(spec) == {"replicas", "selector", "template"}, "the Deployment spec has its fields only",
          sorted(spec))
    check(pod.get("affinity") == {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                            "labelSelector": {"matchLabels": spec["selector"]["matchLabels"]}}}]}},
          "soft pod anti-affinity over nodes by default", pod.get("affinity"))
    check(cfg_allowed(docs) == [],
          "control.allowed_users is empty by default (reaperd's own broker user only)")
    vols = {v["name"]: v for v in pod["volumes"]}
    check(vols["broker-password"]["secret"]["secretName"] == "reaper-broker"
          and vols["broker-password"]["secret"]["items"] == [{"key": "password", "path": "broker-password"}],
          "the broker password file comes from Secret reaper-broker, key password")
    check(vols["config"]["configMap"]["name"] == "reaper", "the config volume is the reaper ConfigMap")
    checksum = spec["template"]["metadata"]["annotations"].get("checksum/config", "")
    check(re.fullmatch(r"[0-9a-f]{64}", checksum) is not None, "pods carry checksum/config")

    cm = one(objs, "ConfigMap", "reaper")
    cfg = yaml.safe_load(cm["data"]["reaper.yaml"])
    check(cfg == values["config"], "the ConfigMap's reaper.yaml is values.yaml's config, whole")
    cfg_path = os.path.join(work, "reaper.yaml")
    pw_path = os.path.join(work, "broker-password")
    open(cfg_path, "w").write(cm["data"]["reaper.yaml"])
    open(pw_path, "w").write("not-a-real-password\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "REAPER_BROKER_PASSWORD_FILE": pw_path}
    p = subprocess.run([reaperd, "--config", cfg_path, "--check-config"], capture_output=True,
                       text=True, env=env)
    check(p.returncode == 0, "reaperd --check-config accepts the rendered reaper.yaml",
          (p.stdout + p.stderr).strip()[-400:])

    svc = one(objs, "Service")
    check(svc["spec"].get("publishNotReadyAddresses") is True, "the Service keeps unready pods")
    check(svc["spec"]["ports"] == [{"name": "http", "port": 9464, "targetPort": "http", "protocol": "TCP"}],
          "the Service serves port 9464 to the pods' http port")
    check(svc["spec"]["selector"].items() <= spec["template"]["metadata"]["labels"].items(),
          "the Service selects reaperd's pods")
    pdb = one(objs, "PodDisruptionBudget")
    check(pdb["spec"]["minAvailable"] == 1 and pdb["spec"]["selector"] == spec["selector"],
          "the PDB keeps one reaperd")
    rc, out, err = render(tool, chart, work, "confd-noack",
                          merged(SECRETS, {"brokerConfd": {"enabled": True}}))
    check(rc != 0 and "acknowledgeBrokerWide" in err,
          "brokerConfd.enabled without acknowledgeBrokerWide is refused (broker-wide)", err.strip()[-200:])
    rc, out, err = render(tool, chart, work, "confd",
                          merged(SECRETS, {"brokerConfd": {"enabled": True, "acknowledgeBrokerWide": True}}))
    check(rc == 0, "brokerConfd renders with acknowledgeBrokerWide: true", err)
    confd = one(by_kind(docs_of("confd", out)), "ConfigMap", "reaper-broker-confd")
    snippet = confd["data"].get("90-reaper-consumer-timeout.conf", "")
    check(re.search(r"^consumer_timeout = 21600000$", snippet, re.M) is not None,
          "the broker snippet sets consumer_timeout = 21600000 (21600 s in ms)", snippet)
    check(all(l.startswith("#") or re.fullmatch(r"[a-z_.]+ = \S+", l) for l in snippet.splitlines() if l),
          "the broker snippet is rabbitmq.conf syntax (key = value, comments)")
    restart = confd["metadata"]["annotations"].get("reaper.vibey.io/restart-checksum", "")
    check(re.fullmatch(r"[0-9a-f]{64}", restart) is not None, "the snippet carries its restart checksum")

    # --- everything switched on ---------------------------------------------
    on = merged(SECRETS, {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
                          "prometheusRule": {"enabled": True, "alerts": {"sightingOpen": {"for": "2h"}}},
                          "grafanaDashboard": {"enabled": True}})
    rc, out, err = render(tool, chart, work, "all", on)
    check(rc == 0, "renders with every optional object on", err)
    objs = by_kind(docs_of("all", out))
    sm = one(objs, "ServiceMonitor")
    check(sm is not None and sm["metadata"]["labels"].get("release") == "prom"
          and sm["spec"]["endpoints"][0]["port"] == "http" and sm["spec"]["endpoints"][0]["path"] == "/metrics"
          and sm["spec"]["namespaceSelector"] == {"matchNames": ["vibey"]}
          and sm["spec"]["selector"]["matchLabels"].items() <= one(objs, "Service")["metadata"]["labels"].items(),
          "the ServiceMonitor scrapes /metrics on the Service's http port")
    rule = one(objs, "PrometheusRule")
    rules = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]} if rule else {}
    check(sorted(rules) == sorted(ALERTS), "every alert", sorted(rules))
    for name, r in rules.items():
        check('job="reaper", namespace="vibey"' in r["expr"] and r["expr"].count("(") == r["expr"].count(")"),
              "%s is scoped to the release and balanced" % name, r["expr"])
        for text in r.get("annotations", {}).values():
            check("{{ $labels" in text or "{{ $value" in text or "{{" not in text,
                  "%s: Prometheus template syntax kept in its annotations" % name, text)
        check(r.get("annotations", {}).get("runbook_url") == values["prometheusRule"]["runbookBaseUrl"] + "#" + name.lower(),
              "%s: runbook_url points at its README section" % name)
    check(rules.get("ReaperSightingOpenTooLong", {}).get("for") == "2h"
          and "reaper_sightings_open" in rules.get("ReaperSightingOpenTooLong", {}).get("expr", ""),
          "the sighting alert waits prometheusRule.alerts.sightingOpen.for")
    check("reaper_up" in rules.get("ReaperBackendUnreadable", {}).get("expr", "")
          and "{{ $labels.backend }}" in rules.get("ReaperBackendUnreadable", {}).get("annotations", {}).get("summary", ""),
          "the backend alert names the backend")
    check("> 180" in rules.get("ReaperNoSuccessfulPass", {}).get("expr", ""),
          "no successful pass: 3 x reap.interval_seconds (60) = 180 s")
    check("< 2" in rules.get("ReaperReplicasNotReady", {}).get("expr", ""), "replicas: fewer ready than replicaCount 2")
    # promtool: the rendered group checked and unit-tested, one test per alert.
    rules_path = os.path.join(work, "reaper-rules.yaml")
    with open(rules_path, "w") as f:
        yaml.safe_dump(rule["spec"], f, sort_keys=False)
    promtool = shutil.which("promtool")
    if check(promtool is not None, "promtool is installed (Debian's prometheus package; scripts/install-deps)"):
        p = subprocess.run([promtool, "check", "rules", rules_path], capture_output=True, text=True)
        check(p.returncode == 0, "promtool check rules accepts the rendered rules", (p.stdout + p.stderr)[-600:])
        test_src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "alerts_test.yaml")
        tests = yaml.safe_load(open(test_src))
        tested = {a["alertname"] for t in tests["tests"] for a in t.get("alert_rule_test", [])
                  if a.get("exp_alerts")}
        check(tested == set(ALERTS), "alerts_test.yaml fires every alert at least once", sorted(tested))
        test_path = os.path.join(work, "alerts_test.yaml")
        shutil.copy(test_src, test_path)
        p = subprocess.run([promtool, "test", "rules", test_path], capture_output=True, text=True, cwd=work)
        check(p.returncode == 0, "promtool test rules: every alert fires when it should and only then",
              (p.stdout + p.stderr)[-1500:])
    # Switches: every alert off, and additionalRules appended.
    alerts_off = {k: {"enabled": False} for k in values["prometheusRule"]["alerts"]}
    mine = {"alert": "MyReaperAlert", "expr": "vector(1)", "labels": {"severity": "info"}}
    rc, out, err = render(tool, chart, work, "alerts-off",
                          merged(SECRETS, {"prometheusRule": {"enabled": True, "alerts": alerts_off,
                                                              "additionalRules": [mine]}}))
    rule_off = one(by_kind(docs_of("alerts-off", out)), "PrometheusRule") if rc == 0 else None
    check(rule_off is not None and rule_off["spec"]["groups"][0]["rules"] == [mine],
          "every alert can be switched off; additionalRules are appended as they are", err)
    # extraEnv, extraEnvFrom, extraVolumes, extraVolumeMounts
    extra = {"extraEnv": [{"name": "PGSSLROOTCERT", "value": "/run/tls/ca.crt"}],
             "extraEnvFrom": [{"secretRef": {"name": "reaper-env"}}],
             "extraVolumes": [{"name": "tls", "secret": {"secretName": "reaper-tls"}}],
             "extraVolumeMounts": [{"name": "tls", "mountPath": "/run/tls", "readOnly": True}]}
    rc, out, err = render(tool, chart, work, "extra", merged(SECRETS, extra))
    check(rc == 0, "renders with extraEnv, extraEnvFrom, extraVolumes, extraVolumeMounts", err)
    podx = one(by_kind(docs_of("extra", out)), "Deployment")["spec"]["template"]["spec"]
    check(extra["extraVolumes"][0] in podx["volumes"], "extraVolumes are pod volumes")
    for c in podx["containers"] + podx["initContainers"]:
        check(extra["extraEnv"][0] in c["env"] and c["env"][0]["name"] == "PGPASSWORD"
              and c.get("envFrom") == extra["extraEnvFrom"]
              and extra["extraVolumeMounts"][0] in c["volumeMounts"],
              "container %s gets extraEnv, extraEnvFrom and extraVolumeMounts" % c["name"])
    dash = one(objs, "ConfigMap", "reaper-dashboard")
    check(dash is not None and dash["metadata"]["labels"].get("grafana_dashboard") == "1"
          and json.loads(dash["data"]["reaper.json"]) == dashboard,
          "the dashboard ConfigMap carries files/dashboard.json for the Grafana sidecar")

    # --- switches off, and a changed timeout ------------------------------------
    off = merged(SECRETS, {"replicaCount": 1, "migrate": {"enabled": False},
                           "serviceAccount": {"create": False}, "podAntiAffinityPreset": "hard",
                           "config": {"http": {"listen": "0.0.0.0:9100"},
                                      "reap": {"consumer_timeout_seconds": 30000}}})
    rc, out, err = render(tool, chart, work, "off", off)
    check(rc == 0, "renders with the switches off", err)
    objs = by_kind(docs_of("off", out))
    check("PodDisruptionBudget" not in objs, "no PDB for one replica")
    check("ServiceAccount" not in objs, "no ServiceAccount when serviceAccount.create is false")
    check(one(objs, "ConfigMap", "reaper-broker-confd") is None, "no broker snippet when brokerConfd is off")
    dep2 = one(objs, "Deployment")
    pod2 = dep2["spec"]["template"]["spec"]
    check("initContainers" not in pod2, "no migration initContainer when migrate is off")
    check(list(pod2.get("affinity", {}).get("podAntiAffinity", {})) == ["requiredDuringSchedulingIgnoredDuringExecution"],
          "podAntiAffinityPreset hard requires the replicas on different nodes")
    check(pod2["serviceAccountName"] == "default", "the default ServiceAccount is used")
    check(pod2["containers"][0]["ports"][0]["containerPort"] == 9100,
          "the container port follows config.http.listen")
    check(dep2["spec"]["template"]["metadata"]["annotations"]["checksum/config"] != checksum,
          "a changed config changes checksum/config (the pods restart)")
    rc, out, err = render(tool, chart, work, "timeout",
                          merged(SECRETS, {"config": {"reap": {"consumer_timeout_seconds": 30000}},
                                           "brokerConfd": {"enabled": True, "acknowledgeBrokerWide": True}}))
    confd2 = one(by_kind(docs_of("timeout", out)), "ConfigMap", "reaper-broker-confd")
    check(confd2 is not None and "consumer_timeout = 30000000" in confd2["data"]["90-reaper-consumer-timeout.conf"]
          and confd2["metadata"]["annotations"]["reaper.vibey.io/restart-checksum"] != restart,
          "a changed timeout changes the snippet and its restart checksum")

    # --- the README's example values, as an operator would use them --------------------
    readme = open(os.path.join(chart, "README.md"), encoding="utf-8").read()
    m = re.search(r"Point the chart at the broker.*?```yaml\n(.*?)```", readme, re.S)
    if check(m is not None, "README.md has the example values file"):
        example = yaml.safe_load("\n".join(l[3:] if l.startswith("   ") else l
                                           for l in m.group(1).splitlines()))
        try:
            import jsonschema
            schema = json.load(open(os.path.join(chart, "values.schema.json")))
            errs = list(jsonschema.Draft7Validator(schema).iter_errors(merged(values, example)))
            check(not errs, "the example values validate against values.schema.json",
                  [e.message for e in errs])
        except ImportError:
            check(False, "jsonschema is installed (scripts/install-deps)")
        rc, out, err = render(tool, chart, work, "example", example)
        check(rc == 0, "the README's example values render", err)
        objs = by_kind(docs_of("example", out))
        dep3 = one(objs, "Deployment")
        check(dep3 is not None and dep3["spec"]["template"]["spec"]["containers"][0]["image"]
              == "registry.example.com/reaper:0.1.0", "the example's image is used")
        check(all(one(objs, k) is not None for k in ("ServiceMonitor", "PrometheusRule")),
              "the example turns on the ServiceMonitor and the PrometheusRule")
        cm3 = one(objs, "ConfigMap", "reaper")
        open(cfg_path, "w").write(cm3["data"]["reaper.yaml"] if cm3 else "")
        p = subprocess.run([reaperd, "--config", cfg_path, "--check-config"], capture_output=True,
                           text=True, env=env)
        check(p.returncode == 0 and "rabbitmq.vibey.svc" in p.stdout,
              "reaperd --check-config accepts the example's reaper.yaml",
              (p.stdout + p.stderr).strip()[-400:])

    # --- names ---------------------------------------------------------------------
    rc, out, err = render(tool, chart, work, "named", SECRETS, release="prod")
    objs = by_kind(docs_of("named", out))
    check(rc == 0 and one(objs, "Deployment")["metadata"]["name"] == "prod-reaper",
          "another release name gives <release>-reaper")

    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
