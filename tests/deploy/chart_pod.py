#!/usr/bin/env python3
"""Turns the chart's rendered manifests into what `podman kube play` runs as
a kubelet would (tests/deploy/test_chart_pod.sh):

    chart_pod.py RENDERED OUT_DIR POD_NAME

Reads RENDERED (helmrender's output), writes OUT_DIR/pod.yaml: the
ConfigMaps as rendered and one Pod made from the Deployment's pod template
as it is (env, Secret and ConfigMap volumes, the init container, probes,
securityContext, resources), plus, in every container, the service-link
variables a kubelet injects for every rendered Service (and the API
server's "kubernetes" Service), although the chart turns them off
(enableServiceLinks: false): reaperd must survive them. It prints, one per
line: the probe port (the containerPort the readiness probe names), the
container port, the number of service-link variables injected, and the
names of the volumes podman makes for the pod (ConfigMap and Secret names,
emptyDir names), space-separated.

Where podman 4.3 (Debian 12) differs from a kubelet, the pod is adapted,
each change named here and nothing else:
  - restartPolicy OnFailure, not Always: podman 4.3 gives init containers
    the pod's policy, so --migrate would run for ever;
  - a Secret volume gets optional: false written out (its default):
    podman 4.3 crashes on a Secret volume without it;
  - enableServiceLinks is dropped (podman does not know it; the variables
    are injected here instead);
  - the template's annotations (checksum/config) are left out: podman 4.3
    refuses an annotation value over 63 characters (a label's limit);
  - the init container is kept after it ran (podman's annotation
    io.podman.annotations.init.container.type: always) so that its exit
    code and log can be read.
Exit codes: 0 ok; 1 the manifests are not as expected.
"""
import sys

import yaml


def fail(msg):
    print("chart_pod.py: " + msg, file=sys.stderr)
    sys.exit(1)


def env_name(service):
    return service.upper().replace("-", "_").replace(".", "_")


def service_links(services):
    """What kubelet's envvars.FromServices gives, ClusterIPs made up."""
    out = []
    for i, svc in enumerate(services):
        ip = "10.96.%d.%d" % (7 + i, 10 + i)
        name = env_name(svc["metadata"]["name"])
        ports = svc["spec"]["ports"]
        out.append((name + "_SERVICE_HOST", ip))
        out.append((name + "_SERVICE_PORT", str(ports[0]["port"])))
        for p in ports:
            if p.get("name"):
                out.append((name + "_SERVICE_PORT_" + env_name(p["name"]), str(p["port"])))
        proto0 = ports[0].get("protocol", "TCP").lower()
        out.append((name + "_PORT", "%s://%s:%d" % (proto0, ip, ports[0]["port"])))
        for p in ports:
            proto = p.get("protocol", "TCP")
            base = "%s_PORT_%d_%s" % (name, p["port"], proto)
            url = "%s://%s:%d" % (proto.lower(), ip, p["port"])
            out += [(base, url), (base + "_PROTO", proto.lower()),
                    (base + "_PORT", str(p["port"])), (base + "_ADDR", ip)]
    return out


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    rendered, out_dir, pod_name = sys.argv[1:]
    docs = [d for d in yaml.safe_load_all(open(rendered)) if d]
    deps = [d for d in docs if d["kind"] == "Deployment"]
    if len(deps) != 1:
        fail("expected one Deployment, got %d" % len(deps))
    dep = deps[0]
    services = [d for d in docs if d["kind"] == "Service"]
    if not services:
        fail("no Service rendered")
    kubernetes = {"metadata": {"name": "kubernetes"},
                  "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}}
    links = service_links(services + [kubernetes])

    tmpl = dep["spec"]["template"]
    spec = dict(tmpl["spec"])
    if spec.pop("enableServiceLinks", None) is not False:
        fail("the pod template does not set enableServiceLinks: false")
    spec["restartPolicy"] = "OnFailure"
    for v in spec.get("volumes", []):
        if "secret" in v:
            v["secret"].setdefault("optional", False)
    for c in spec.get("initContainers", []) + spec["containers"]:
        # A kubelet puts the service links first; the container's own env
        # wins over them.
        c["env"] = [{"name": n, "value": v} for n, v in links] + c.get("env", [])
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": pod_name, "labels": tmpl["metadata"].get("labels", {}),
                        "annotations": {"io.podman.annotations.init.container.type": "always"}},
           "spec": spec}
    cms = [d for d in docs if d["kind"] == "ConfigMap"]
    with open(out_dir + "/pod.yaml", "w") as f:
        yaml.safe_dump_all(cms + [pod], f, sort_keys=False)

    (main_c,) = [c for c in spec["containers"] if c["name"] == "reaperd"]
    probe = main_c["readinessProbe"]["httpGet"]["port"]
    ports = {p.get("name"): p["containerPort"] for p in main_c.get("ports", [])}
    probe_port = ports.get(probe) if isinstance(probe, str) else probe
    if probe_port is None:
        fail("the readiness probe names port %r, which the container does not declare" % probe)
    liveness = main_c["livenessProbe"]["httpGet"]["port"]
    if (ports.get(liveness) if isinstance(liveness, str) else liveness) != probe_port:
        fail("the liveness and readiness probes name different ports")
    print(probe_port)
    print(main_c["ports"][0]["containerPort"])
    print(len(links))
    vols = []
    for v in spec.get("volumes", []):
        vols.append(v["configMap"]["name"] if "configMap" in v else
                    v["secret"]["secretName"] if "secret" in v else v["name"])
    print(" ".join(vols))


if __name__ == "__main__":
    main()
