#!/usr/bin/env python3
"""The dashboard through a real Prometheus (run by .ci/prometheus, which starts everything).

Starts jobs in the simulator, waits until Prometheus has scraped every target, then evaluates
every query of deploy/grafana/scaleset.json through /api/v1/query (each must answer with data)
with its template variables as Grafana fills them ($entity and $scale_set at "All", which is
`.*`; $__rate_interval), and compares the key ones with the truth read from scaleset's API and
each worker's /readyz: sets by state, sets needing attention, jobs waiting per set, runners by
status, leases per worker, desired runners, max_runners, min_idle and enabled per set, each
set's entity_kind and entity_name, API errors provoked here, one build_info per process. The
variables themselves are evaluated as Grafana's label_values does (through the label values
API) and compared with the API's entities and scale sets; with $scale_set at one set every
per-set query answers for that set only, and with an entity that does not exist for none. The
figures move while runners start, so the comparison is retried until it holds at one moment
(or the bound runs out, and the last differences are printed).
"""

import re

import json
import os
import sys
import time
import urllib.parse
import urllib.error
import urllib.request

SIM = os.environ["SIM"]
API = os.environ["API"]
TOKEN = os.environ["TOKEN"]
PROMETHEUS = os.environ["PROMETHEUS"]
WORKERS = dict(w.split("=", 1) for w in os.environ["WORKERS"].split())
DASHBOARD = "deploy/grafana/scaleset.json"
STARTED = time.time()
BOUND = 150  # seconds for each wait below; `timeout` in .ci/prometheus is the hard bound


def get(url, token=None):
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def post(url, body):
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.status


def query(expr):
    url = f"{PROMETHEUS}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    answer = get(url)
    if answer.get("status") != "success":
        raise SystemExit(f"Prometheus refused {expr!r}: {answer}")
    return answer["data"]["result"]


def by(result, label):
    """{label value: number} of an instant vector."""
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def until(what, probe):
    """Calls probe() until it returns no differences; returns after BOUND seconds or fails."""
    deadline = time.monotonic() + BOUND
    while True:
        differences = probe()
        if not differences:
            print(f"ok: {what}")
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: still differs after {BOUND} s:\n  " + "\n  ".join(differences))
        time.sleep(1)


# "All" of a multi-value variable with `allValue: ".*"`, as Grafana puts it in a regex matcher.
ALL = {"entity": ".*", "scale_set": ".*"}


def substitute(expr, variables=ALL):
    """The dashboard's template variables, as Grafana fills them: $__rate_interval is at least
    four scrape intervals (1m for Grafana's default 15 s scrape interval); a variable's value
    (`$name` or `${name}`) is put in as given (a regex: Grafana escapes a single value and joins
    several as `(a|b)`). A variable left over is an error, not a query Prometheus would refuse."""
    values = {"__rate_interval": "1m", "__interval": "15s", "datasource": "", **variables}
    # Longest names first, so `$scale_set` is not read as `$scale` followed by `_set`.
    for name in sorted(values, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", values[name]).replace("$" + name, values[name])
    left = re.findall(r"\$\{?\w+", expr)
    if left:
        raise SystemExit(f"the dashboard uses variables the check does not know: {left} in {expr!r}")
    return expr


def dashboard():
    return json.load(open(DASHBOARD))


def dashboard_queries(variables=ALL):
    """(panel title, query, the raw query) of every target."""
    out = []
    for panel in dashboard()["panels"]:
        for target in panel.get("targets", []):
            out.append((panel["title"], substitute(target["expr"], variables), target["expr"]))
    return out


def label_values(definition, variables=ALL):
    """Grafana's `label_values(selector, label)` through Prometheus's label values API."""
    found = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", definition.strip())
    if not found:
        raise SystemExit(f"a variable query the check cannot evaluate: {definition!r}")
    selector, label = substitute(found.group(1), variables), found.group(2)
    url = f"{PROMETHEUS}/api/v1/label/{label}/values?" + urllib.parse.urlencode({"match[]": selector})
    answer = get(url)
    if answer.get("status") != "success":
        raise SystemExit(f"Prometheus refused {definition!r}: {answer}")
    return set(answer["data"])


def provoke_api_errors():
    """A 401 (no token) and a 404 (an unknown scale set), for the API errors panel."""
    for url, token, status in [
        (f"{API}/api/v1/scale-sets", None, 401),
        (f"{API}/api/v1/scale-sets/00000000-0000-4000-8000-000000000000", TOKEN, 404),
    ]:
        try:
            get(url, token)
        except urllib.error.HTTPError as e:
            if e.code != status:
                raise SystemExit(f"{url} answered {e.code}, not {status}")
        else:
            raise SystemExit(f"{url} answered 200, not {status}")


def scale_sets():
    return get(f"{API}/api/v1/scale-sets", TOKEN)["items"]


def main():
    queries = dashboard_queries()
    assert queries, f"no query in {DASHBOARD}"
    # Jobs flowing: every enabled set listens, then jobs on three of them.
    def listening():
        sets = [s for s in scale_sets() if s["spec"]["enabled"]]
        missing = [s["spec"]["name"] for s in sets if s.get("github_id") is None or s["state"] != "ready"]
        return missing if len(sets) == 4 else [f"{len(sets)} enabled sets stored"]
    until("the four enabled scale sets are ready", listening)
    jobs = {"s1": 2, "s2": 1, "s3": 1}
    for s in scale_sets():
        if s["spec"]["name"] in jobs:
            post(f"{SIM}/_sim/jobs", {"scaleSetId": s["github_id"], "count": jobs[s["spec"]["name"]]})

    def busy():
        instances = get(f"{API}/api/v1/instances", TOKEN)["items"]
        n = sum(1 for i in instances if i["status"] == "busy")
        return [] if n == sum(jobs.values()) else [f"{n} busy runners of {sum(jobs.values())}"]
    until("a runner runs each job", busy)

    def targets_up():
        active = get(f"{PROMETHEUS}/api/v1/targets")["data"]["activeTargets"]
        down = [t["scrapeUrl"] for t in active if t["health"] != "up"]
        return down if len(active) == 1 + len(WORKERS) else [f"{len(active)} targets"]
    until("Prometheus scrapes the server and the three workers", targets_up)

    provoke_api_errors()

    # Every query of the dashboard answers, with data (rates need two scrapes in their window).
    def every_query():
        empty = []
        for title, expr, _ in queries:
            if not query(expr):
                empty.append(f"{title}: {expr} returned nothing")
        return empty
    until(f"every one of the dashboard's {len(queries)} queries returns data", every_query)

    # The variables, as Grafana's label_values fills their lists, are the API's entities and
    # scale sets; chained, $scale_set lists the sets of the chosen $entity only.
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    for name in ("entity", "scale_set"):
        if name not in variables:
            raise SystemExit(f"the dashboard has no ${name} variable")
    entities = {e["id"]: e for e in get(f"{API}/api/v1/entities", TOKEN)["items"]}

    def variable_lists():
        wrong = []
        sets = scale_sets()
        names = {entities[s["entity_id"]]["name"] for s in sets}
        got = label_values(variables["entity"]["definition"])
        if got != names:
            wrong.append(f"$entity lists {sorted(got)}, the API's entities with sets are {sorted(names)}")
        got = label_values(variables["scale_set"]["definition"])
        truth = {s["spec"]["name"] for s in sets}
        if got != truth:
            wrong.append(f"$scale_set lists {sorted(got)}, the API's sets are {sorted(truth)}")
        got = label_values(variables["scale_set"]["definition"], {"entity": "no-such-entity", "scale_set": ".*"})
        if got:
            wrong.append(f"$scale_set lists {sorted(got)} for an entity that does not exist")
        return wrong
    until("$entity and $scale_set list the API's entities and scale sets", variable_lists)

    # The per-set queries follow the variables: one set chosen, they answer for it only; an
    # entity that does not exist, for nothing.
    per_set = [(t, raw) for t, _, raw in queries if "$scale_set" in raw or "$entity" in raw]
    if not per_set:
        raise SystemExit("no dashboard query uses $entity or $scale_set")

    def chosen():
        wrong = []
        one = {"entity": "acme", "scale_set": "s1"}
        none = {"entity": "no-such-entity", "scale_set": ".*"}
        for title, raw in per_set:
            result = query(substitute(raw, one))
            if not result:
                wrong.append(f"{title}: nothing with $scale_set=s1: {substitute(raw, one)}")
            others = {r["metric"].get("scale_set") for r in result} - {"s1", None}
            if others:
                wrong.append(f"{title}: $scale_set=s1 also answers for {sorted(others)}")
            if query(substitute(raw, none)):
                wrong.append(f"{title}: answers for an entity that does not exist")
        return wrong
    until(f"the {len(per_set)} per-set queries follow $entity and $scale_set", chosen)

    expr = {}
    for title, e, _ in queries:
        expr.setdefault(title, []).append(e)
    expr = {title: es[0] if len(es) == 1 else es for title, es in expr.items()}

    def truth_matches():
        wrong = []
        sets = scale_sets()
        instances = get(f"{API}/api/v1/instances", TOKEN)["items"]
        states = {}
        for s in sets:
            states[s["state"]] = states.get(s["state"], 0) + 1
        got = by(query(expr["Scale sets by state"]), "state")
        for state in set(states) | set(got):
            if got.get(state, 0) != states.get(state, 0):
                wrong.append(f"sets {state}: Prometheus {got.get(state, 0)}, API {states.get(state, 0)}")
        attention = sum(1 for s in sets if s.get("attention"))
        got = sum(by(query(expr["Scale sets needing attention"]), "").values())
        if got != attention:
            wrong.append(f"needing attention: Prometheus {got}, API {attention}")
        got = by(query(expr["Jobs waiting for a runner"]), "scale_set")
        for s in sets:
            name = s["spec"]["name"]
            if got.get(name) != s["jobs_waiting"]:
                wrong.append(f"jobs waiting on {name}: Prometheus {got.get(name)}, API {s['jobs_waiting']}")
        statuses = {}
        for i in instances:
            statuses[i["status"]] = statuses.get(i["status"], 0) + 1
        got = by(query(expr["Runners by status"]), "status")
        for status in set(statuses) | set(got):
            if got.get(status, 0) != statuses.get(status, 0):
                wrong.append(f"runners {status}: Prometheus {got.get(status, 0)}, API {statuses.get(status, 0)}")
        got = by(query(expr["Lease holders: scale sets served per worker"]), "worker")
        held = {name: get(f"{url}/readyz")["leasesHeld"] for name, url in WORKERS.items()}
        for name, count in held.items():
            if got.get(name) != count:
                wrong.append(f"leases of {name}: Prometheus {got.get(name)}, its /readyz {count}")
        if sum(held.values()) != 4:
            wrong.append(f"the workers hold {sum(held.values())} leases, not the 4 enabled sets'")
        return wrong
    until("sets by state, attention, jobs waiting, runners by status and leases equal the API's", truth_matches)

    desired, max_runners, min_idle = expr["Desired runners, min idle and max"]

    def per_set_truth():
        wrong = []
        sets = scale_sets()
        for e, field, of in [
            (desired, "desired_runners", lambda s: s["desired_runners"]),
            (max_runners, "max_runners", lambda s: s["spec"]["max_runners"]),
            (min_idle, "min_idle", lambda s: s["spec"]["min_idle"]),
            (expr["Scale sets served"], "enabled", lambda s: int(s["spec"]["enabled"])),
        ]:
            got = by(query(e), "scale_set")
            for s in sets:
                name = s["spec"]["name"]
                if got.get(name) != of(s):
                    wrong.append(f"{field} of {name}: Prometheus {got.get(name)}, API {of(s)}")
        # Each set's entity, as two labels equal to the API's entity kind and name.
        labels = query("group by (scale_set, entity_kind, entity_name) (scaleset_scale_set_enabled)")
        got = {r["metric"]["scale_set"]: (r["metric"].get("entity_kind"), r["metric"].get("entity_name")) for r in labels}
        for s in sets:
            entity = entities[s["entity_id"]]
            truth = (entity["kind"], entity["name"])
            if got.get(s["spec"]["name"]) != truth:
                wrong.append(f"entity of {s['spec']['name']}: Prometheus {got.get(s['spec']['name'])}, API {truth}")
        # Messages came during this run for the sets given jobs (their age is at most the
        # run's); a set never sent a message has no age (empty polls are not messages).
        ages = by(query(expr["Last message age"]), "scale_set")
        run = time.time() - STARTED + 5
        for s in sets:
            name = s["spec"]["name"]
            if name in jobs and not 0 <= ages.get(name, -1) <= run:
                wrong.append(f"last message age of {name}: {ages.get(name)}, not within this run's {run:.0f} s")
            if name not in jobs and name in ages:
                wrong.append(f"{name} never had a message, yet its age is {ages[name]}")
        return wrong
    until("desired runners, max_runners, min_idle, enabled, entity labels and message ages equal the API's", per_set_truth)

    def api_errors():
        got = {(r["metric"].get("route"), r["metric"].get("status")) for r in query(expr["API errors by route and status"])}
        wrong = []
        for provoked in [("/api/v1/scale-sets", "401"), ("/api/v1/scale-sets/{id}", "404")]:
            if provoked not in got:
                wrong.append(f"the provoked {provoked} is not among the API errors {sorted(got)}")
        return wrong
    until("the provoked 401 and 404 show among the API errors", api_errors)

    # One build_info and one set of process series per scaleset process (the server, three
    # workers), each process started during this run.
    processes = 1 + len(WORKERS)
    builds, _restarts = expr["Builds running and restarts"]
    got = sum(by(query(builds), "version").values())
    if got != processes:
        raise SystemExit(f"build_info counts {got} processes, not {processes}")
    for title in ["Process CPU", "Process resident memory"]:
        pods = by(query(expr[title]), "pod")
        if len(pods) != processes:
            raise SystemExit(f"{title}: {sorted(pods)}, not {processes} processes")
    started = by(query("process_start_time_seconds and on (job, instance) scaleset_build_info"), "pod")
    if len(started) != processes or not all(STARTED - 600 <= t <= time.time() + 1 for t in started.values()):
        raise SystemExit(f"process start times {started} are not this run's ({STARTED})")
    print(f"ok: build_info and the process series of the {processes} processes")

    # The job timings moved, and in the millisecond buckets (issue 50 item 2).
    count = query("sum(scaleset_job_queued_to_runner_requested_seconds_count)")
    if not count or float(count[0]["value"][1]) < 1:
        raise SystemExit(f"no job timing observed: {count}")
    rules = get(f"{PROMETHEUS}/api/v1/rules")["data"]["groups"]
    names = sorted(r["name"] for g in rules for r in g["rules"])
    unhealthy = [r["name"] for g in rules for r in g["rules"] if r.get("health") not in ("ok", "unknown")]
    if unhealthy or len(names) < 2:
        raise SystemExit(f"the alerting rules do not evaluate: {names} {unhealthy}")
    print(f"ok: the alerting rules {names} evaluate")


if __name__ == "__main__":
    try:
        main()
    except SystemExit as e:
        if e.code not in (None, 0):
            print(e.code, file=sys.stderr)
            sys.exit(1)
        raise
