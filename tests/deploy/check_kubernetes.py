#!/usr/bin/env python3
"""deploy/kubernetes/ holds together: every manifest parses, the kustomization lists them all,
the ConfigMap's config passes `natsfleet lint` with the pod's environment, and the Deployment's
probes, port, mounts, grace period and selectors agree with that config and the other objects.

  check_kubernetes.py NATSFLEET_BINARY DEPLOY_DIR
"""
import os
import re
import subprocess
import sys
import tempfile
import tomllib

import yaml

failures = []


def fail(message):
    failures.append(message)


def duration_seconds(text):
    total = 0.0
    for number, unit in re.findall(r"(\d+)(ms|s|m|h)", text):
        total += int(number) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def main():
    binary, folder = sys.argv[1], sys.argv[2]
    objects = {}
    files = sorted(f for f in os.listdir(folder) if f.endswith(".yaml"))
    for name in files:
        with open(os.path.join(folder, name)) as f:
            for doc in yaml.safe_load_all(f):
                if doc is None:
                    continue
                for key in ("apiVersion", "kind"):
                    if key not in doc:
                        fail(f"{name}: no {key}")
                if doc.get("kind") != "Kustomization" and not doc.get("metadata", {}).get("name"):
                    fail(f"{name}: no metadata.name")
                objects[doc["kind"]] = (name, doc)

    _, kustomization = objects["Kustomization"]
    listed = set(kustomization["resources"])
    expected = set(files) - {"kustomization.yaml"}
    if listed != expected:
        fail(f"kustomization.yaml lists {sorted(listed)}, the folder has {sorted(expected)}")

    _, deployment = objects["Deployment"]
    _, config_map = objects["ConfigMap"]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}

    # The config the pods run: mounted where `run` reads it, and linted with their environment.
    args = container["args"]
    if args[0] != "run":
        fail(f"the container runs {args}, not `natsfleet run`")
    config_path = args[1]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    config_volume = next((n for n, v in volumes.items()
                          if v.get("configMap", {}).get("name") == config_map["metadata"]["name"]),
                         None)
    if config_volume is None:
        fail("no volume mounts the ConfigMap")
        return
    key = os.path.relpath(config_path, mounts[config_volume])
    if key not in config_map["data"]:
        fail(f"{config_path} is not a key of the ConfigMap (it has {sorted(config_map['data'])})")
        return
    text = config_map["data"][key]
    for variable in re.findall(r"\$\{(\w+)\}", text):
        if variable not in env:
            fail(f"the config needs ${{{variable}}}, which the Deployment does not set")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, key)
        with open(path, "w") as f:
            f.write(text)
        lint = subprocess.run([binary, "lint", path], capture_output=True, text=True,
                              env={**os.environ, **env})
        if lint.returncode != 0:
            fail(f"natsfleet lint of the ConfigMap's config: exit {lint.returncode}: "
                 f"{lint.stdout}{lint.stderr}")
    config = tomllib.loads(text)

    # Probes on the health port the config listens on.
    listen = config.get("health", {}).get("listen", "127.0.0.1:9464")
    host, port = listen.rsplit(":", 1)
    if host.startswith("127."):
        fail(f"health.listen {listen} is loopback: the kubelet cannot reach it")
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    if ports.get("health") != int(port):
        fail(f"containerPort health is {ports.get('health')}, the config listens on {port}")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        got = container.get(probe, {}).get("httpGet", {})
        if got.get("path") != path or got.get("port") != "health":
            fail(f"{probe} is {got}, expected {path} on port health")

    grace = pod.get("terminationGracePeriodSeconds", 30)
    shutdown = duration_seconds(config.get("shutdown_timeout", "10s"))
    if grace <= shutdown:
        fail(f"terminationGracePeriodSeconds {grace} is not above shutdown_timeout {shutdown}s")
    if not pod.get("securityContext", {}).get("runAsNonRoot"):
        fail("the pod may run as root")

    labels = deployment["spec"]["template"]["metadata"]["labels"]
    selectors = {
        "Deployment": deployment["spec"]["selector"]["matchLabels"],
        "PodDisruptionBudget": objects["PodDisruptionBudget"][1]["spec"]["selector"]["matchLabels"],
        "Service": objects["Service"][1]["spec"]["selector"],
    }
    for kind, selector in selectors.items():
        if any(labels.get(k) != v for k, v in selector.items()):
            fail(f"the {kind}'s selector {selector} does not match the pods' labels {labels}")
    service = objects["Service"][1]
    monitor = objects["ServiceMonitor"][1]
    if any(service["metadata"]["labels"].get(k) != v
           for k, v in monitor["spec"]["selector"]["matchLabels"].items()):
        fail("the ServiceMonitor does not select the Service")
    service_ports = {p["name"] for p in service["spec"]["ports"]}
    for endpoint in monitor["spec"]["endpoints"]:
        if endpoint["port"] not in service_ports or endpoint.get("path") != "/metrics":
            fail(f"the ServiceMonitor scrapes {endpoint}, not /metrics on a port of the Service")


main()
for message in failures:
    print(f"FAIL: {message}")
print(f"{len(failures)} problem(s) in the Kubernetes files")
sys.exit(1 if failures else 0)
