#!/usr/bin/env python3
"""The dashboard through a real Prometheus (run by .ci/prometheus, which starts everything).

Starts jobs in the simulator, waits until Prometheus has scraped every target, then evaluates
every query of deploy/grafana/scaleset.json through /api/v1/query (each must answer with data)
and compares the key ones with the truth read from scaleset's API and each worker's /readyz:
sets by state, sets needing attention, jobs waiting per set, runners by status, leases per
worker. The figures move while runners start, so the comparison is retried until it holds at
one moment (or the bound runs out, and the last differences are printed).
"""

import json
import os
import sys
import time
import urllib.parse
import urllib.request

SIM = os.environ["SIM"]
API = os.environ["API"]
TOKEN = os.environ["TOKEN"]
PROMETHEUS = os.environ["PROMETHEUS"]
WORKERS = dict(w.split("=", 1) for w in os.environ["WORKERS"].split())
DASHBOARD = "deploy/grafana/scaleset.json"
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


def substitute(expr):
    """The dashboard's template variables, as Grafana would fill them."""
    for name, value in {
        "$__rate_interval": "1m",
        "$__interval": "15s",
        "${datasource}": "",
        "$datasource": "",
    }.items():
        expr = expr.replace(name, value)
    return expr


def dashboard_queries():
    panels = json.load(open(DASHBOARD))["panels"]
    out = []
    for panel in panels:
        for target in panel.get("targets", []):
            out.append((panel["title"], substitute(target["expr"])))
    return out


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

    # Every query of the dashboard answers, with data (rates need two scrapes in their window).
    def every_query():
        empty = []
        for title, expr in queries:
            if not query(expr):
                empty.append(f"{title}: {expr} returned nothing")
        return empty
    until(f"every one of the dashboard's {len(queries)} queries returns data", every_query)

    expr = {title: e for title, e in queries}

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
