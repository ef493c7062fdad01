"""What .ci/kubernetes checks on an overlay's render beyond schemas, as `kubectl apply -k` would
deploy it (the image re-pointed at the one .ci/image builds):

- every container runs that image, except init containers that only fill an emptyDir the
  scaleset container mounts read-only (the provider's init container);
- every probe names a port its container serves;
- every ConfigMap a workload mounts is rendered, every Secret is rendered or is one the overlay's
  instructions create;
- the providers: each external provider's executable is on a volume of the container that runs
  it, filled by an init container that names that file; its config file is mounted (a rendered
  ConfigMap holding it, or a Secret); every path its config file names is mounted; every URL in
  it has a port some NetworkPolicy egress rule allows for those pods;
- the runners' route: `[worker] instance_api_url` is served by an Ingress (its host, TLS for
  https, both instance-facing prefixes) or a LoadBalancer Service, whose Service reaches a
  scaleset-server container port that is its `[server] listen` port.

Usage: kubernetes_check.py RENDER.yaml KUSTOMIZATION.yaml
"""

import posixpath
import re
import sys
import tomllib
from urllib.parse import urlsplit

import yaml

IMAGE = "localhost/scaleset:ci"
INSTANCE_ROUTES = ("/api/v1/metadata/", "/api/v1/callbacks/")

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
instructions = open(sys.argv[2]).read()
operator_secrets = set(re.findall(r"create secret (?:generic|tls) (\S+)", instructions))
operator_secret_keys = set(re.findall(r"--from-file=([^=\s]+)=", instructions))
rendered = {(d["kind"], d["metadata"]["name"]) for d in docs}
config_maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
services = [d for d in docs if d["kind"] == "Service"]
policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
workloads = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job")]
problems = []
assert workloads, f"{sys.argv[1]}: no workload rendered"


def under(path, directory):
    """Whether `path` is `directory` or inside it (both absolute)."""
    rel = posixpath.relpath(path, directory)
    return rel == "." or not rel.startswith("..")


def mount_of(container, path):
    """The volumeMount of `container` that holds the file `path` (the longest mountPath)."""
    found = [m for m in container.get("volumeMounts", []) if under(path, m["mountPath"])]
    return max(found, key=lambda m: len(m["mountPath"]), default=None)


def file_in_volume(volume, mount, path):
    """The content of `path` when the mount is a rendered ConfigMap that holds it, else None;
    records a problem when a mounted ConfigMap or operator Secret lacks the file."""
    rel = mount.get("subPath") or posixpath.relpath(path, mount["mountPath"])
    if "configMap" in volume:
        data = config_maps.get(volume["configMap"]["name"], {}).get("data", {})
        key = {i["path"]: i["key"] for i in volume["configMap"].get("items", [])}.get(rel, rel)
        if key not in data:
            problems.append(f"{path} is not in ConfigMap {volume['configMap']['name']} (keys {sorted(data)})")
        return data.get(key)
    if "secret" in volume:
        name = volume["secret"]["secretName"]
        if ("Secret", name) not in rendered and rel not in operator_secret_keys:
            problems.append(f"{path}: the overlay's instructions put no {rel} in Secret {name}")
    return None


def selects(selector, labels):
    return selector.items() <= labels.items()


def egress_allows(pod_labels, port):
    for policy in policies:
        spec = policy["spec"]
        if "Egress" not in spec.get("policyTypes", []):
            continue
        if not selects(spec["podSelector"].get("matchLabels", {}), pod_labels):
            continue
        for rule in spec.get("egress", []):
            ports = rule.get("ports")
            if not ports:
                return True
            for p in ports:
                if p.get("protocol", "TCP") == "TCP" and isinstance(p.get("port"), int):
                    if p["port"] <= port <= p.get("endPort", p["port"]):
                        return True
    return False


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def url_port(url):
    return url.port or {"https": 443, "http": 80}.get(url.scheme)


def scaleset_container(spec):
    return next(c for c in spec["containers"] if c["name"] == "scaleset")


def read_config(spec, where):
    c = scaleset_container(spec)
    args = c.get("command", []) + c.get("args", [])
    path = args[args.index("--config") + 1]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mount = mount_of(c, path)
    if mount is None:
        problems.append(f"{where}: its configuration {path} is on no volume")
        return args, {}
    text = file_in_volume(volumes[mount["name"]], mount, path)
    return args, tomllib.loads(text) if text else {}


servers = []  # (workload, its pod labels, its config)
for w in workloads:
    spec = w["spec"]["template"]["spec"]
    labels = w["spec"]["template"]["metadata"].get("labels", {})
    where = f"{w['kind']} {w['metadata']['name']}"
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    main = scaleset_container(spec)
    main_mounts = {m["name"]: m for m in main.get("volumeMounts", [])}
    inits = spec.get("initContainers", [])
    for c in inits + spec["containers"]:
        if c["image"] != IMAGE:
            fills = c in inits and c.get("volumeMounts") and all(
                "emptyDir" in volumes.get(m["name"], {})
                and main_mounts.get(m["name"], {}).get("readOnly")
                for m in c["volumeMounts"]
            )
            if not fills:
                problems.append(f"{where}: container {c['name']} runs {c['image']!r}, not the built image")
        ports = {p.get("name") for p in c.get("ports", [])} | {p["containerPort"] for p in c.get("ports", [])}
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            port = (c.get(probe) or {}).get("httpGet", {}).get("port")
            if port is not None and port not in ports:
                problems.append(f"{where}: {probe} of {c['name']} names port {port!r}, which it does not serve")
    for v in volumes.values():
        if "configMap" in v and ("ConfigMap", v["configMap"]["name"]) not in rendered:
            problems.append(f"{where}: mounts ConfigMap {v['configMap']['name']}, which is not in the render")
        if "secret" in v:
            secret = v["secret"]["secretName"]
            if ("Secret", secret) not in rendered and secret not in operator_secrets:
                problems.append(f"{where}: mounts Secret {secret}, neither rendered nor named in the overlay's instructions")

    args, config = read_config(spec, where)
    runs_worker = "scaleset-worker" in args or "--with-worker" in args
    if "scaleset-server" in args:
        servers.append((w, labels, config))
    if not runs_worker:
        continue
    for provider in config.get("provider", []):
        if provider.get("kind") != "external":
            continue
        name = f"{where}: provider {provider['name']!r}"
        exe = provider["executable"]
        mount = mount_of(main, exe)
        if mount is None:
            problems.append(f"{name}: its executable {exe} is on no volume the scaleset container mounts")
        elif "emptyDir" in volumes[mount["name"]]:
            filled = False
            for init in inits:
                for m in init.get("volumeMounts", []):
                    if m["name"] == mount["name"]:
                        target = posixpath.join(m["mountPath"], posixpath.relpath(exe, mount["mountPath"]))
                        filled |= target in init.get("command", []) + init.get("args", [])
            if not filled:
                problems.append(f"{name}: no init container puts its executable {exe} on the emptyDir {mount['name']}")
        config_file = provider["config_file"]
        mount = mount_of(main, config_file)
        if mount is None:
            problems.append(f"{name}: its config file {config_file} is on no volume the scaleset container mounts")
            continue
        text = file_in_volume(volumes[mount["name"]], mount, config_file)
        if text is None:
            continue
        for value in strings(tomllib.loads(text)):
            if value.startswith("/"):
                m = mount_of(main, value)
                if m is None:
                    problems.append(f"{name}: its config file names {value}, which is on no mounted volume")
                else:
                    file_in_volume(volumes[m["name"]], m, value)
            url = urlsplit(value)
            if url.scheme in ("http", "https") and url.hostname:
                if not egress_allows(labels, url_port(url)):
                    problems.append(
                        f"{name}: its config file calls {value}, but no NetworkPolicy allows "
                        f"egress to port {url_port(url)} from these pods "
                        f"(networkpolicy-provider-egress.yaml)")

# The runners' route: the machines reach instance_api_url, and it must land on scaleset-server.
urls = {c["worker"]["instance_api_url"] for _, _, c in servers if c.get("worker", {}).get("instance_api_url")}
for w, _, c in servers:
    for text in urls:
        url = urlsplit(text)
        port = url_port(url)
        prefix = url.path.rstrip("/")
        routes = [prefix + r for r in INSTANCE_ROUTES]
        backends = []  # (Service name, its port: a name or a number)
        for ingress in (d for d in docs if d["kind"] == "Ingress"):
            spec = ingress["spec"]
            tls_hosts = {h for t in spec.get("tls", []) for h in t.get("hosts", [])}
            if (url.scheme == "https" and (port != 443 or url.hostname not in tls_hosts)) or (
                url.scheme == "http" and port != 80
            ):
                continue
            for rule in spec.get("rules", []):
                if rule.get("host") not in (None, url.hostname):
                    continue
                paths = rule.get("http", {}).get("paths", [])
                served = []
                for route in routes:
                    for p in paths:
                        base = p["path"].rstrip("/")
                        prefix_match = p.get("pathType") == "Prefix" and (
                            route.rstrip("/") == base or route.startswith(base + "/"))
                        if prefix_match:
                            s = p["backend"]["service"]
                            served.append((s["name"], s["port"].get("name") or s["port"].get("number")))
                            break
                if len(served) == len(routes):
                    backends += served
        for s in services:
            if s["spec"].get("type") == "LoadBalancer":
                backends += [(s["metadata"]["name"], p["port"]) for p in s["spec"]["ports"] if p["port"] == port]
        if not backends:
            problems.append(
                f"instance_api_url {text}: no Ingress serves {' and '.join(routes)} on {url.hostname}:{port}"
                + (" with TLS" if url.scheme == "https" else "") + ", and no LoadBalancer Service has port "
                f"{port}: the runner machines cannot reach scaleset-server")
            continue
        listen_port = int(c.get("server", {}).get("listen", "127.0.0.1:8080").rsplit(":", 1)[1])
        for service_name, service_port in backends:
            service = next((s for s in services if s["metadata"]["name"] == service_name), None)
            if service is None:
                problems.append(f"instance_api_url {text}: routed to Service {service_name}, which is not in the render")
                continue
            ports = [p for p in service["spec"]["ports"] if service_port in (p.get("name"), p["port"])]
            if not ports:
                problems.append(f"instance_api_url {text}: Service {service_name} has no port {service_port!r}")
                continue
            target = ports[0].get("targetPort", ports[0]["port"])
            selected = [(sw, sc) for sw, sl, sc in servers if selects(service["spec"]["selector"], sl)]
            if not selected:
                problems.append(f"instance_api_url {text}: Service {service_name} selects no scaleset-server pod")
            for sw, sc in selected:
                container = scaleset_container(sw["spec"]["template"]["spec"])
                served = [p["containerPort"] for p in container.get("ports", []) if target in (p.get("name"), p["containerPort"])]
                if served != [listen_port]:
                    problems.append(
                        f"instance_api_url {text}: Service {service_name} port {service_port!r} targets "
                        f"{target!r} of {sw['kind']} {sw['metadata']['name']}, which is {served or 'no port'}, "
                        f"not its [server] listen port {listen_port}")
if not urls and any(p.get("kind") == "external" for _, _, c in servers for p in c.get("provider", [])):
    problems.append("no instance_api_url: an external provider's machines have no route to scaleset-server")

if problems:
    sys.exit(f"{sys.argv[1]}:\n  " + "\n  ".join(problems))
print(f"{sys.argv[1]}: {len(workloads)} workload(s) run the built image; probes, ConfigMaps and "
      f"Secrets resolve; providers' executables, config files and egress ports check; "
      f"instance_api_url {sorted(urls)} routes to scaleset-server")
