#!/usr/bin/env python3
"""lamport-lock from Python's standard library alone (no dependency).

Three things against the local peer's HTTP API (README "HTTP API"):
  1. acquire a lock with a TTL, use its fencing token, release it;
  2. a connection-bound hold: the lock is held while the HTTP answer stays open, and the
     peer writes {"ended": reason} on it when the hold ends for any reason;
  3. a watch: every change of a lock, as server-sent events.

    python3 examples/python/lamport_lock_example.py [http://127.0.0.1:7001]

The peer's URL is the first argument, else $LAMPORT_PEER, else http://127.0.0.1:7001.
The whole API is described in OpenAPI 3.1 at GET /v1/openapi.json.
"""
import http.client
import json
import os
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

PEER = (sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LAMPORT_PEER", "http://127.0.0.1:7001")).rstrip("/")


def post(path, body):
    """POST JSON, return (status, answer). Errors are JSON too: {"error": code, "message": ...}."""
    req = urllib.request.Request(PEER + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req) as res:
            return res.status, json.load(res)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def lock_path(name, action):
    return "/v1/locks/" + urllib.parse.quote(name, safe="") + "/" + action


def acquire_and_release(name):
    status, grant = post(lock_path(name, "acquire"), {"ttl_ms": 10000, "timeout_ms": 5000, "owner": "python-example"})
    if status != 200:
        raise SystemExit("acquire failed: %s %s" % (grant["error"], grant["message"]))
    # The token is a decimal string: compare it as an integer at the resource you protect.
    print("acquired %s token=%d" % (name, int(grant["token"])))
    status, answer = post(lock_path(name, "release"), {"id": grant["id"]})
    print("released %s: %s" % (name, answer))


def connection_hold(name):
    """Holds `name` while the connection is open; returns when the peer says the hold ended."""
    url = urllib.parse.urlsplit(PEER)
    conn = http.client.HTTPConnection(url.hostname, url.port or 80)
    conn.request("POST", lock_path(name, "acquire"), json.dumps({"hold": "connection", "ttl_ms": 0}),
                 {"content-type": "application/json"})
    res = conn.getresponse()
    if res.status != 200:
        raise SystemExit("acquire failed: %s" % json.load(res))
    grant = json.loads(res.readline())  # application/x-ndjson: the grant, one line
    print("holding %s on the connection, token=%s" % (name, grant["token"]))
    # Here the work runs. A second client releases the hold by its id (as an administrator's
    # force-release or a lost lease would end it): the peer tells this connection why.
    post(lock_path(name, "release"), {"id": grant["id"]})
    ended = json.loads(res.readline())
    print("hold ended: %s" % ended["ended"])
    conn.close()


def watch(name, changes, ready):
    """Reads the watch stream of `name` until `changes` events after the first state."""
    res = urllib.request.urlopen(PEER + lock_path(name, "watch"))
    event, seen = None, 0
    for raw in res:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[len("event: "):]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: "):])
            if event == "state":
                ready.set()
                continue
            print("watch %s: %s by %s" % (event, data["lock"], data["request"]["owner"]))
            seen += 1
            if seen == changes:
                res.close()
                return


def main():
    name = "python-example"
    acquire_and_release(name)
    connection_hold(name + "-conn")
    ready = threading.Event()
    watcher = threading.Thread(target=watch, args=(name, 3, ready))
    watcher.start()
    ready.wait(5)
    acquire_and_release(name)  # the watcher sees: queued, granted, released
    watcher.join(10)
    print("done")


if __name__ == "__main__":
    main()
