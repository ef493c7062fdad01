#!/usr/bin/env python3
"""A GARM external provider for tests that behaves like one built on garm-provider-common.

Written from the observed behaviour of cloudbase/garm-provider-aws (see
docs/providers.md, "The boot test"), not from its code. What it shares with the real ones:

- CreateInstance reads the bootstrap from stdin the way Go's encoding/json does (unknown fields
  ignored, missing ones zero), then picks the runner download for the instance's `os_type` and
  `arch` from `tools` *before anything else*. With none (an empty list, or no entry for that
  OS/arch) it prints garm-provider-common's error and exits 1:
  `failed to get runner spec: failed to get tools: failed to find tools for OS linux and arch amd64`.
- It renders the install script GARM's providers put in cloud-init (download the runner from the
  tool's URL, check its sha256, fetch the JIT files from the metadata URL with the instance token,
  post status to the callback URL, run the runner) and a cloud-config that runs it.
- Every error exits 1, "not found" on GetInstance included; a DeleteInstance of an instance that
  is not there succeeds (exit 0), as garm-provider-aws does.

Its "cloud" is this machine: an instance is a directory `<state_dir>/instances/<name>` in which
the install script runs as a process of its own session. DeleteInstance kills that session and
removes the directory. `state_dir` comes from the provider config file
(`state_dir = "/path"`), GARM_PROVIDER_CONFIG_FILE. Every call is appended to
`<state_dir>/calls.jsonl` as {command, instance, exit, at} (`at`: seconds since the epoch when
the call ended; never the bootstrap: it holds the token).
Standard library only.
"""

import base64
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

# GARM's os_type/arch spellings -> GitHub's runner download spellings.
GITHUB_OS = {"linux": "linux", "windows": "win", "osx": "osx"}
GITHUB_ARCH = {"amd64": "x64", "arm64": "arm64", "arm": "arm", "386": "x86"}


class Failure(Exception):
    """An error the provider reports on stderr with exit 1."""


def state_dir():
    path = os.environ.get("GARM_PROVIDER_CONFIG_FILE", "")
    try:
        with open(path, encoding="utf-8") as config:
            for line in config:
                key, sep, value = line.partition("=")
                if sep and key.strip() == "state_dir":
                    return value.strip().strip('"')
    except OSError as err:
        raise Failure(f"failed to read provider config {path!r}: {err}") from err
    raise Failure(f"provider config {path!r} has no state_dir")


def instances_dir():
    path = os.path.join(state_dir(), "instances")
    os.makedirs(path, exist_ok=True)
    return path


def find_tools(os_type, arch, tools):
    """garm-provider-common's GetTools, as observed: the download matching OS and arch."""
    want_os, want_arch = GITHUB_OS.get(os_type), GITHUB_ARCH.get(arch)
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("os") and tool.get("os") == want_os and tool.get("architecture") == want_arch:
            return tool
    raise Failure(
        "failed to get runner spec: failed to get tools: "
        f"failed to find tools for OS {os_type} and arch {arch}"
    )


def install_script(bootstrap, tool):
    """The runner install script, in the steps garm-provider-common's built-in template takes.

    It runs in the instance directory: the runner goes to ./actions-runner (not /home/runner),
    and with no systemd in a scratch directory it starts ./run.sh itself instead of installing
    the unit file (which it still fetches, as the template does)."""
    values = {
        "CALLBACK_URL": bootstrap.get("callback-url") or "",
        "METADATA_URL": bootstrap.get("metadata-url") or "",
        "BEARER_TOKEN": bootstrap.get("instance-token") or "",
        "DOWNLOAD_URL": tool.get("download_url") or "",
        "FILENAME": tool.get("filename") or "runner.tar.gz",
        "CHECKSUM": tool.get("sha256_checksum") or "",
        "TEMP_TOKEN": tool.get("temp_download_token") or "",
        "RUNNER_NAME": bootstrap.get("name") or "",
    }
    head = "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items())
    return "#!/bin/bash\nset -e\nset -o pipefail\n" + head + r"""
RUNNER_HOME="$PWD/actions-runner"
# GARM's template appends /status to a callback URL without it.
case "$CALLBACK_URL" in */status|*/status/) ;; *) CALLBACK_URL="${CALLBACK_URL%/}/status" ;; esac
SYSTEM_INFO_URL="${CALLBACK_URL%/}"; SYSTEM_INFO_URL="${SYSTEM_INFO_URL%/status}/system-info/"

call() {
  curl --retry 5 --retry-delay 1 --retry-connrefused --fail -sS -X POST -d "$1" \
    -H 'Accept: application/json' -H "Authorization: Bearer $BEARER_TOKEN" "$2" >/dev/null
}
sendStatus() { call "{\"status\": \"installing\", \"message\": \"$1\"}" "$CALLBACK_URL"; }
success() { call "{\"status\": \"idle\", \"message\": \"$1\", \"agent_id\": $2}" "$CALLBACK_URL"; }
fail() { call "{\"status\": \"failed\", \"message\": \"$1\"}" "$CALLBACK_URL" || true; echo "$1" >&2; exit 1; }
metadata() {
  curl --retry 5 --retry-delay 1 --retry-connrefused --fail -sS \
    -H 'Accept: application/json' -H "Authorization: Bearer $BEARER_TOKEN" "${METADATA_URL%/}/$1"
}

sendStatus "downloading tools from $DOWNLOAD_URL"
if [ -n "$TEMP_TOKEN" ]; then
  curl --retry 5 --retry-delay 1 --fail -sSL -H "Authorization: Bearer $TEMP_TOKEN" -o "$FILENAME" "$DOWNLOAD_URL" || fail "failed to download tools"
else
  curl --retry 5 --retry-delay 1 --fail -sSL -o "$FILENAME" "$DOWNLOAD_URL" || fail "failed to download tools"
fi
if [ -n "$CHECKSUM" ]; then
  echo "$CHECKSUM  $FILENAME" | sha256sum -c - >/dev/null || fail "checksum of $FILENAME does not match $CHECKSUM"
fi
mkdir -p "$RUNNER_HOME"
sendStatus "extracting runner"
tar xzf "$FILENAME" -C "$RUNNER_HOME" || fail "failed to extract runner"

sendStatus "fetching the runner's JIT configuration"
metadata credentials/runner > "$RUNNER_HOME/.runner" || fail "failed to get runner file"
metadata credentials/credentials > "$RUNNER_HOME/.credentials" || fail "failed to get credentials file"
metadata credentials/credentials_rsaparams > "$RUNNER_HOME/.credentials_rsaparams" || fail "failed to get credentials_rsaparams file"
metadata system/service-name > service-name || fail "failed to get service name"
metadata 'systemd/unit-file?runAsUser=runner' > unit-file || fail "failed to get service file"

sendStatus "configuring runner"
(cd "$RUNNER_HOME" && ./config.sh) || fail "failed to configure runner"
sendStatus "starting runner"
"$RUNNER_HOME/run.sh" &
runner=$!
for _ in $(seq 1 300); do
  [ -s "$RUNNER_HOME/.agent_id" ] && break
  kill -0 "$runner" 2>/dev/null || fail "the runner exited before it connected"
  sleep 0.2
done
[ -s "$RUNNER_HOME/.agent_id" ] || fail "the runner did not connect within 60 s"
AGENT_ID=$(cat "$RUNNER_HOME/.agent_id")
. /etc/os-release 2>/dev/null || true
call "{\"os_name\": \"${NAME:-}\", \"os_version\": \"${VERSION_ID:-}\", \"agent_id\": $AGENT_ID}" "$SYSTEM_INFO_URL" || true
success "runner successfully installed" "$AGENT_ID"
wait "$runner"
"""


def cloud_config(script):
    """The user data a cloud provider would hand the VM: curl and tar, the script, run it."""
    encoded = base64.b64encode(script.encode()).decode()
    return (
        "#cloud-config\npackages:\n  - curl\n  - tar\nwrite_files:\n"
        "  - path: /install_runner.sh\n    encoding: b64\n    permissions: \"0755\"\n"
        f"    content: {encoded}\nruncmd:\n  - [\"/install_runner.sh\"]\n"
    )


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # A zombie (exited, not yet reaped by init) counts as gone.
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def record_of(path):
    with open(os.path.join(path, "instance.json"), encoding="utf-8") as f:
        record = json.load(f)
    pid = record.pop("pid", 0)
    if record.get("status") == "running" and not (pid and alive(pid)):
        record["status"] = "stopped"
    return record, pid


def find(name):
    base = instances_dir()
    for entry in sorted(os.listdir(base)):
        path = os.path.join(base, entry)
        try:
            record, pid = record_of(path)
        except (OSError, ValueError):
            continue
        if name in (record.get("name"), record.get("provider_id")):
            return path, record, pid
    return None


def start(path):
    env = {"PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "HOME": path}
    with open(os.path.join(path, "install.log"), "ab") as log:
        process = subprocess.Popen(
            ["bash", os.path.join(path, "install_runner.sh")],
            cwd=path,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    return process.pid


def stop(pid):
    if not pid:
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except OSError:
        return
    for _ in range(50):
        if not alive(pid):
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def save(path, record, pid):
    with open(os.path.join(path, "instance.json.tmp"), "w", encoding="utf-8") as f:
        json.dump(dict(record, pid=pid), f)
    os.replace(os.path.join(path, "instance.json.tmp"), os.path.join(path, "instance.json"))


def create():
    try:
        bootstrap = json.load(sys.stdin)
    except ValueError as err:
        raise Failure(f"failed to decode bootstrap params: {err}") from err
    if not isinstance(bootstrap, dict):
        raise Failure("failed to decode bootstrap params: not a JSON object")
    os_type, arch = bootstrap.get("os_type") or "", bootstrap.get("arch") or ""
    tool = find_tools(os_type, arch, bootstrap.get("tools"))
    if os_type != "linux":
        raise Failure(f"the test provider boots linux instances only, not {os_type}")
    name = bootstrap.get("name") or ""
    if not name or "/" in name or name.startswith("."):
        raise Failure(f"invalid instance name {name!r}")
    if find(name):
        # GARM's duplicate exit code.
        print(f"instance {name} already exists", file=sys.stderr)
        return 31
    path = os.path.join(instances_dir(), name)
    os.makedirs(path)
    script = install_script(bootstrap, tool)
    with open(os.path.join(path, "install_runner.sh"), "w", encoding="utf-8") as f:
        f.write(script)
    with open(os.path.join(path, "user-data"), "w", encoding="utf-8") as f:
        f.write(cloud_config(script))
    with open(os.path.join(path, "tool.json"), "w", encoding="utf-8") as f:
        json.dump(tool, f)
    record = {
        "provider_id": "local-" + name,
        "name": name,
        "os_type": os_type,
        "os_arch": arch,
        "status": "running",
        "pool_id": bootstrap.get("pool_id") or os.environ.get("GARM_POOL_ID", ""),
    }
    save(path, record, start(path))
    print(json.dumps(record))
    return 0


def main():
    command = os.environ.get("GARM_COMMAND", "")
    instance = os.environ.get("GARM_INSTANCE_ID", "")
    code = 1
    try:
        if command == "CreateInstance":
            code = create()
        elif command == "GetVersion":
            print("v0.1.1")
            code = 0
        elif command == "ListInstances":
            pool = os.environ.get("GARM_POOL_ID", "")
            base = instances_dir()
            found = []
            for entry in sorted(os.listdir(base)):
                try:
                    record, _ = record_of(os.path.join(base, entry))
                except (OSError, ValueError):
                    continue
                if record.get("pool_id") == pool:
                    found.append(record)
            print(json.dumps(found))
            code = 0
        elif command == "GetInstance":
            hit = find(instance)
            if hit is None:
                # garm-provider-aws exits 1, not GARM's 30, for "not found".
                raise Failure(f"failed to get instance: instance {instance} not found")
            print(json.dumps(hit[1]))
            code = 0
        elif command == "DeleteInstance":
            hit = find(instance)
            if hit is not None:
                path, _, pid = hit
                stop(pid)
                shutil.rmtree(path)
            code = 0
        elif command == "RemoveAllInstances":
            base = instances_dir()
            for entry in sorted(os.listdir(base)):
                path = os.path.join(base, entry)
                try:
                    _, pid = record_of(path)
                except (OSError, ValueError):
                    pid = 0
                stop(pid)
                shutil.rmtree(path, ignore_errors=True)
            code = 0
        elif command in ("StopInstance", "StartInstance"):
            hit = find(instance)
            if hit is None:
                raise Failure(f"instance {instance} not found")
            path, record, pid = hit
            if command == "StopInstance":
                stop(pid)
                record["status"], pid = "stopped", 0
            elif not (pid and alive(pid)):
                record["status"], pid = "running", start(path)
            save(path, record, pid)
            code = 0
        else:
            raise Failure(f"unknown command {command!r}")
    except Failure as err:
        print(str(err), file=sys.stderr)
        code = 1
    try:
        with open(os.path.join(state_dir(), "calls.jsonl"), "a", encoding="utf-8") as log:
            log.write(json.dumps({"command": command, "instance": instance, "exit": code, "at": time.time()}) + "\n")
    except (Failure, OSError):
        pass
    return code


if __name__ == "__main__":
    sys.exit(main())
