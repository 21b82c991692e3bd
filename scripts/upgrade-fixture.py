#!/usr/bin/env python3
"""The half of scripts/upgrade-fixture that talks to svc, with the standard library only.

  upgrade-fixture.py populate <engine> <http base> <mqtt port> <work dir>
      puts the fixture's fixed data into a running svc through its REST API and MQTT
      (mosquitto_pub, mosquitto_sub), and keeps the API key it made in <work dir>/<engine>.json;
  upgrade-fixture.py check <engine> <http base> <mqtt port> <work dir>
      runs every HTTP check of the manifest and the retained-message check against it (not the
      persistent session's: reading its queue would empty it);
  upgrade-fixture.py manifest <work dir> <manifest.json> <version> <commit> <build date>
      writes the manifest.

Run by scripts/upgrade-fixture, which starts and stops svc around it."""
import hashlib, json, os, subprocess, sys, time, urllib.error, urllib.parse, urllib.request, uuid

ADMIN_PASSWORD = "Adm1n-test-pass!"
OPERATOR = "operator"
OPERATOR_PASSWORD = "Operator-fixture-pass-1"
KEY_NAME = "fixture-key"
SESSION_CLIENT = "fixture-session"
SESSION_EXPIRY = str(5200 * 7 * 24 * 3600)
MANUAL = b"Pump P-101 manual\nrev 3\nTorque 12 Nm.\n"

PRODUCTS = {
    "fields": [
        {"name": "sku", "type": "string", "required": True},
        {"name": "price", "type": "number", "required": True},
        {"name": "active", "type": "boolean", "required": False},
        {"name": "released", "type": "date", "required": False},
        {"name": "specs", "type": "json", "required": False},
    ],
    "indexDetails": [{"fields": ["sku"], "isUnique": True}],
}
DOCS = {
    "fields": [
        {"name": "title", "type": "string", "required": True},
        {"name": "manual", "type": "file", "required": False},
    ],
}
SITES = {
    "fields": [
        {"name": "name", "type": "string", "required": True},
        {"name": "lines", "type": "number", "required": False},
    ],
}
P1 = {"id": "p1", "sku": "A-1", "price": 12.5, "active": True,
      "released": "2026-01-15T08:00:00.000Z", "specs": {"voltage": 230, "tags": ["pump"]}}
P2 = {"id": "p2", "sku": "B-2", "price": 7.25, "active": False,
      "released": "2026-03-01T00:00:00.000Z", "specs": {"voltage": 24, "tags": []}}
P3 = {"id": "p3", "sku": "C-3", "price": 99, "active": True}
NOTE = {"id": "n1", "text": "schemaless table", "n": 3, "nested": {"ok": True}}
SITE = {"id": "s1", "name": "Rotterdam", "lines": 4}
TAGS = {
    "acme": [
        {"path": "acme/line1/temp", "historize": True, "unit": "degC"},
        {"path": "acme/line1/pressure", "historize": True, "unit": "bar"},
        {"path": "acme/line1/state", "historize": False},
        {"path": "acme/line1/setpoint", "historize": False},
        {"path": "acme/alerts/boiler", "historize": False},
        {"path": "acme/alerts/pump", "historize": False},
    ],
    "beta": [{"path": "beta/site/flow", "historize": True, "unit": "m3/h"}],
}
POINTS = [
    ("acme/line1/temp", 21.5, "2026-11-22T10:00:00Z"),
    ("acme/line1/temp", 21.75, "2026-11-22T10:01:00Z"),
    ("acme/line1/temp", 22.0, "2026-11-22T10:02:00Z"),
    ("acme/line1/pressure", 1.013, "2026-11-22T10:00:00Z"),
    ("acme/line1/pressure", 1.02, "2026-11-22T11:00:00Z"),
    ("beta/site/flow", 118.0, "2026-11-22T09:30:00Z"),
]
RETAINED = [("acme/line1/state", "running"), ("acme/line1/setpoint", '{"value":75.5}')]
QUEUED = [("acme/alerts/boiler", "overheat"), ("acme/alerts/pump", '{"code":7}')]
DOUBLE_JS = "function main(input) {\n  return {twice: input.n * 2};\n}"
GREET_PY = "def main(body):\n    return {'hello': str(body['name']).upper()}"
SCALE_FLOW = [
    {"id": "in", "type": "inject", "wires": ["times10"]},
    {"id": "times10", "type": "function",
     "config": {"code": "function main(msg) { return {payload: msg.payload * 10}; }"},
     "wires": ["out"]},
    {"id": "out", "type": "debug", "config": {"label": "scaled"}},
]
WATCH_FLOW = [
    {"id": "temps", "type": "tag-in", "config": {"topic": "acme/line1/temp"}, "wires": ["seen"]},
    {"id": "seen", "type": "debug"},
]


def request(base, method, path, token=None, domain=None, body=None, key=None, raw=None,
            content_type=None):
    headers = {}
    data = None
    if token:
        headers["Authorization"] = "Bearer " + token
    if key:
        headers["X-Svc-Api-Key"] = key
    if domain:
        headers["Domain"] = "domains:" + domain
    if raw is not None:
        data = raw
        headers["Content-Type"] = content_type
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def ok(base, method, path, status, **kw):
    got, body = request(base, method, path, **kw)
    if got != status:
        sys.exit(f"{method} {path}: {got} (wanted {status}): {body[:400]!r}")
    return json.loads(body) if body else None


def login(base, user, password):
    return ok(base, "POST", "/auth/login", 200, body={"username": user, "password": password})["tkn"]


def mosquitto(tool, port, user, password, *args):
    cmd = [tool, "-h", "127.0.0.1", "-p", str(port), "-u", user, "-P", password, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[:1] + list(args))}: exit {done.returncode}: {done.stderr}")
    return done.stdout


def wait_for(what, probe, within=15):
    deadline = time.time() + within
    while time.time() < deadline:
        if probe():
            return
        time.sleep(0.2)
    sys.exit(f"timed out waiting for {what}")


def multipart(fields, files):
    boundary = "fixture-" + uuid.uuid4().hex
    parts = []
    for name, value in fields:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                     .encode() + value.encode() + b"\r\n")
    for name, filename, mime, data in files:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                     f'filename="{filename}"\r\nContent-Type: {mime}\r\n\r\n'.encode()
                     + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def populate(engine, base, port, work):
    admin = login(base, "admin", ADMIN_PASSWORD)
    a = dict(token=admin)
    for domain in ("acme", "beta"):
        ok(base, "POST", "/auth/domains", 201, body={"name": domain}, **a)
        ok(base, "POST", "/svc/namespaces", 201, domain=domain,
           body={"name": "plant", "path": domain, "description": f"{domain}'s branch"}, **a)
    ok(base, "POST", "/svc/collections", 201, domain="acme",
       body={"name": "products", "description": "Products", **PRODUCTS}, **a)
    ok(base, "POST", "/svc/collections", 201, domain="acme",
       body={"name": "docs", "description": "Documents", **DOCS}, **a)
    ok(base, "POST", "/svc/collections", 201, domain="beta",
       body={"name": "sites", "description": "Sites", **SITES}, **a)
    for rec in (P1, P2, P3):
        ok(base, "POST", "/svc/products", 201, domain="acme", body=rec, **a)
    ok(base, "POST", "/svc/notes", 201, domain="acme", body=NOTE, **a)
    ok(base, "POST", "/svc/sites", 201, domain="beta", body=SITE, **a)
    raw, ctype = multipart([("record", json.dumps({"id": "d1", "title": "Pump manual"}))],
                           [("manual", "manual.txt", "text/plain", MANUAL)])
    doc = ok(base, "POST", "/svc/docs", 201, domain="acme", raw=raw, content_type=ctype, **a)
    assert doc["manual"] == "manual.txt", doc

    # The second user: a member of acme's group `operators`, with an API key of its own.
    uid = ok(base, "POST", "/auth/user", 201,
             body={"username": OPERATOR, "password": OPERATOR_PASSWORD}, **a)["id"]
    grants = [{"feature": "collections", "action": "read", "scope": "*"},
              {"feature": "tags", "action": "read", "scope": "*"}]
    gid = ok(base, "POST", "/auth/group", 201, domain="acme",
             body={"name": "operators", "grants": grants}, **a)["id"]
    ok(base, "POST", f"/auth/group/{urllib.parse.quote(gid, safe='')}/user/"
       f"{urllib.parse.quote(uid, safe='')}", 200, domain="acme", **a)
    operator = login(base, OPERATOR, OPERATOR_PASSWORD)
    key = ok(base, "POST", "/auth/keys", 201, token=operator, domain="acme",
             body={"name": KEY_NAME})["key"]
    assert key.startswith("svcx_"), key

    for domain, tags in TAGS.items():
        for tag in tags:
            ok(base, "POST", "/svc/tags", 201, domain=domain, body=tag, **a)

    # Processes: JavaScript behind an HTTP trigger, Python called by name.
    ok(base, "POST", "/svc/processes", 201, domain="acme",
       body={"name": "double", "code": DOUBLE_JS,
             "triggers": [{"type": "http", "config": {"endpoint": "double"}}]}, **a)
    ok(base, "POST", "/svc/processes", 201, domain="acme",
       body={"name": "greet", "language": "python", "code": GREET_PY}, **a)
    # Flows: one run by hand, one running on a tag.
    ok(base, "POST", "/svc/flows", 201, domain="acme",
       body={"name": "scale", "description": "times ten", "nodes": SCALE_FLOW}, **a)
    ok(base, "POST", "/svc/flows", 201, domain="acme",
       body={"name": "watch", "running": True, "nodes": WATCH_FLOW}, **a)
    # Upstreams to a broker address nothing listens on (port 9 of the loopback: discard).
    ok(base, "POST", "/svc/upstreams", 201, domain="acme",
       body={"name": "corp", "host": "127.0.0.1", "port": 9, "username": "edge",
             "password": "upstream-fixture-pw",
             "bindings": [{"direction": "out", "local": "acme/line1", "remote": "corp/acme/line1",
                           "qos": 1}]}, **a)
    ok(base, "POST", "/svc/upstreams", 201, domain="acme",
       body={"name": "standby", "host": "standby.invalid", "enabled": False,
             "bindings": [{"direction": "in", "local": "acme/alerts", "remote": "hq/alerts"}]},
       **a)

    # The persistent session: subscribed, then offline.
    mosquitto("mosquitto_sub", port, OPERATOR, OPERATOR_PASSWORD, "-V", "5", "-c",
              "-i", SESSION_CLIENT, "-x", SESSION_EXPIRY, "-q", "1", "-t", "acme/alerts/#", "-E")
    # Historian points at fixed times, retained messages, and the session's queue, all QoS 1.
    for topic, value, at in POINTS:
        mosquitto("mosquitto_pub", port, "admin", ADMIN_PASSWORD, "-V", "5", "-q", "1",
                  "-t", topic, "-m", json.dumps({"value": value, "timestamp": at}))
    for topic, payload in RETAINED:
        mosquitto("mosquitto_pub", port, "admin", ADMIN_PASSWORD, "-V", "5", "-q", "1", "-r",
                  "-t", topic, "-m", payload)
    for topic, payload in QUEUED:
        mosquitto("mosquitto_pub", port, "admin", ADMIN_PASSWORD, "-V", "5", "-q", "1",
                  "-t", topic, "-m", payload)
    for domain, topic, count in (("acme", "acme/line1/temp", 3), ("acme", "acme/line1/pressure", 2),
                                 ("beta", "beta/site/flow", 1)):
        def stored(domain=domain, topic=topic, count=count):
            status, body = request(base, "PATCH", "/svc/historian/last", token=admin,
                                   domain=domain, body={"topic": topic, "limit": 10})
            return status == 200 and len(json.loads(body)) == count
        wait_for(f"{count} historian points of {topic}", stored)
    # Runs of both processes and a flow, so their run logs hold something.
    ok(base, "POST", "/svc/processes/execute", 200, domain="acme",
       body={"name": "double", "input": {"n": 1}}, **a)
    ok(base, "POST", "/svc/processes/execute", 200, domain="acme",
       body={"name": "greet", "input": {"name": "x"}}, **a)
    with open(os.path.join(work, f"{engine}.json"), "w") as f:
        json.dump({"api_key": key}, f)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def checks():
    """What a later binary must answer. `as`: admin, operator (its password) or key (the
    operator's API key); `json`: the expected body, matched as a subset (see manifest.json)."""
    c = []

    def add(what, method, path, status, who="admin", domain=None, body=None, **expect):
        check = {"what": what, "as": who, "method": method, "path": path, "status": status}
        if domain:
            check["domain"] = domain
        if body is not None:
            check["body"] = body
        check.update(expect)
        c.append(check)

    add("the operator logs in with its password", "POST", "/auth/login", 200, who="none",
        body={"username": OPERATOR, "password": OPERATOR_PASSWORD}, json={"success": True})
    add("a wrong password is refused", "POST", "/auth/login", 401, who="none",
        body={"username": OPERATOR, "password": "wrong-password"})
    add("both domains are there", "GET", "/auth/domains", 200,
        json_has=[{"name": "acme"}, {"name": "beta"}])
    for domain, name, schema in (("acme", "products", PRODUCTS), ("acme", "docs", DOCS),
                                 ("beta", "sites", SITES)):
        add(f"{domain}'s collection {name} and its typed fields", "GET",
            f"/svc/{domain}.collections:{name}", 200, domain=domain,
            json={"id": f"{domain}.collections:{name}", "name": name,
                  "indexDetails": [], **schema})
    products = [{**{k: v for k, v in r.items() if k != "id"}, "id": f"acme.products:{r['id']}"}
                for r in (P1, P2, P3)]
    add("the products, sorted by price", "GET", "/svc/products/all?sort=[price][desc]", 200,
        domain="acme", json=[products[2], products[0], products[1]])
    add("a filter on a number field", "GET",
        "/svc/products/all?filter[price][gt][number]=10&sort=[sku][asc]", 200, domain="acme",
        json=[products[0], products[2]])
    add("one product by id", "GET", "/svc/acme.products:p1", 200, domain="acme", json=products[0])
    add("the product count", "GET", "/svc/products/count", 200, domain="acme", json={"count": 3})
    add("a typed field still refuses a wrong type", "POST", "/svc/products", 400, domain="acme",
        body={"sku": "Z-9", "price": "cheap"})
    add("the unique index on sku still holds", "POST", "/svc/products", 409, domain="acme",
        body={"sku": "A-1", "price": 1})
    add("a schemaless record", "GET", "/svc/acme.notes:n1", 200, domain="acme",
        json={**NOTE, "id": "acme.notes:n1"})
    add("beta's record", "GET", "/svc/sites/all", 200, domain="beta",
        json=[{**SITE, "id": "beta.sites:s1"}])
    add("the record with a file", "GET", "/svc/acme.docs:d1", 200, domain="acme",
        json={"id": "acme.docs:d1", "title": "Pump manual", "manual": "manual.txt"})
    add("the file's bytes", "GET", "/svc/file/acme.docs%3Ad1/manual/manual.txt", 200,
        domain="acme", sha256=sha256(MANUAL), length=len(MANUAL))
    add("the operator reads acme's products", "GET", "/svc/products/count", 200, who="operator",
        domain="acme", json={"count": 3})
    add("the operator's API key reads them too", "GET", "/svc/products/all?sort=[sku][asc]", 200,
        who="key", domain="acme", json=products)
    add("the operator may not create domains", "POST", "/auth/domains", 401, who="operator",
        body={"name": "gamma"})
    add("acme's tags", "GET", "/svc/tag/list", 200, domain="acme",
        json=sorted(t["path"] for t in TAGS["acme"]))
    add("beta's tags", "GET", "/svc/tag/list", 200, domain="beta",
        json=[t["path"] for t in TAGS["beta"]])
    add("acme's tags, with their units", "GET", "/svc/tags/all?sort=[path][asc]", 200,
        domain="acme", json=sorted(TAGS["acme"], key=lambda t: t["path"]))
    add("acme's namespace", "GET", "/svc/namespaces/all", 200, domain="acme",
        json=[{"name": "plant", "path": "acme", "description": "acme's branch"}])
    add("the operator's group grants it reading collections", "GET",
        "/auth/permission/action/feature/collections/scope/products", 200, who="operator",
        domain="acme", json={"actions": ["read"]})
    add("the operator's API key is listed", "GET", "/auth/keys", 200, who="operator",
        json=[{"name": KEY_NAME, "domain": "domains:acme"}])
    add("acme's historized tags", "GET", "/svc/historian/list", 200, domain="acme",
        json_has=["acme/line1/pressure", "acme/line1/temp"])
    add("the temperature history", "PATCH", "/svc/historian", 200, domain="acme",
        body={"topic": "acme/line1/temp", "start_time": "2026-11-22T00:00:00Z",
              "end_time": "2026-11-23T00:00:00Z"},
        json=[{"value": v, "timestamp": at.replace("Z", ".000Z")}
              for t, v, at in POINTS if t == "acme/line1/temp"])
    add("the newest pressure points", "PATCH", "/svc/historian/last", 200, domain="acme",
        body={"topic": "acme/line1/pressure", "limit": 10},
        json=[{"value": 1.02, "timestamp": "2026-11-22T11:00:00.000Z"},
              {"value": 1.013, "timestamp": "2026-11-22T10:00:00.000Z"}])
    add("beta's history", "PATCH", "/svc/historian/last", 200, domain="beta",
        body={"topic": "beta/site/flow", "limit": 10},
        json=[{"value": 118.0, "timestamp": "2026-11-22T09:30:00.000Z"}])
    add("the JavaScript process answers on its HTTP trigger", "POST",
        "/svc/processes/http/double", 200, domain="acme", body={"n": 21}, json={"twice": 42})
    add("the JavaScript process runs by name", "POST", "/svc/processes/execute", 200,
        domain="acme", body={"name": "double", "input": {"n": 4}},
        json={"success": True, "output": {"twice": 8}})
    add("the Python process runs by name", "POST", "/svc/processes/execute", 200, domain="acme",
        body={"name": "greet", "input": {"name": "plant"}},
        json={"success": True, "output": {"hello": "PLANT"}})
    add("the processes' records", "GET", "/svc/processes/all?sort=[name][asc]", 200,
        domain="acme", json=[{"name": "double", "code": DOUBLE_JS},
                             {"name": "greet", "language": "python", "code": GREET_PY}])
    add("a flow runs by hand", "POST", "/svc/flows/execute", 200, domain="acme",
        body={"name": "scale", "input": 4}, json={"debug": [{"node": "out", "msg": {"payload": 40}}]})
    add("the flows' records", "GET", "/svc/flows/all?sort=[name][asc]", 200, domain="acme",
        json=[{"name": "scale", "description": "times ten", "running": False},
              {"name": "watch", "running": True}])
    add("the upstreams' records", "GET", "/svc/upstreams/all?sort=[name][asc]", 200,
        domain="acme",
        json=[{"name": "corp", "host": "127.0.0.1", "port": 9, "username": "edge",
               "password_set": True, "enabled": True,
               "bindings": [{"direction": "out", "local": "acme/line1",
                             "remote": "corp/acme/line1", "qos": 1}]},
              {"name": "standby", "host": "standby.invalid", "enabled": False,
               "password_set": False,
               "bindings": [{"direction": "in", "local": "acme/alerts", "remote": "hq/alerts"}]}])
    add("the disabled upstream stays disabled", "GET", "/svc/upstreams/status", 200,
        domain="acme", json_has=[{"name": "standby", "state": "disabled"}])
    return c


def mqtt_checks():
    return [
        {"what": "retained messages, to the operator's API key", "as": "key",
         "client_id": "fixture-retained", "subscribe": "acme/line1/#", "qos": 1,
         "messages": [{"topic": t, "payload": p, "retain": True} for t, p in RETAINED]},
        {"what": "the persistent session gets the messages queued while it was offline",
         "as": "operator", "client_id": SESSION_CLIENT, "resume_session": True,
         "messages": [{"topic": t, "payload": p, "retain": False} for t, p in QUEUED]},
    ]


def subset(want, got, at="$"):
    """None when `got` holds `want` (objects: every wanted key; arrays: same length, each item;
    numbers: equal as doubles), else where it differs."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{at}: wanted an object, got {json.dumps(got)[:200]}"
        for k, v in want.items():
            if k not in got:
                return f"{at}.{k}: missing"
            miss = subset(v, got[k], f"{at}.{k}")
            if miss:
                return miss
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{at}: wanted {len(want)} items, got {json.dumps(got)[:300]}"
        for i, (w, g) in enumerate(zip(want, got)):
            miss = subset(w, g, f"{at}[{i}]")
            if miss:
                return miss
        return None
    if isinstance(want, (int, float)) and not isinstance(want, bool) \
            and isinstance(got, (int, float)) and not isinstance(got, bool):
        return None if float(want) == float(got) else f"{at}: wanted {want}, got {got}"
    return None if want == got else f"{at}: wanted {json.dumps(want)}, got {json.dumps(got)}"


def check(engine, base, port, work):
    with open(os.path.join(work, f"{engine}.json")) as f:
        key = json.load(f)["api_key"]
    admin = login(base, "admin", ADMIN_PASSWORD)
    operator = login(base, OPERATOR, OPERATOR_PASSWORD)
    failures = []
    for c in checks():
        cred = {"admin": {"token": admin}, "operator": {"token": operator}, "key": {"key": key},
                "none": {}}[c["as"]]
        status, body = request(base, c["method"], c["path"], domain=c.get("domain"),
                               body=c.get("body"), **cred)
        miss = None
        if status != c["status"]:
            miss = f"status {status}: {body[:300]!r}"
        elif "sha256" in c:
            if sha256(body) != c["sha256"] or len(body) != c["length"]:
                miss = f"file of {len(body)} bytes, sha256 {sha256(body)}"
        elif "json" in c:
            miss = subset(c["json"], json.loads(body))
        elif "json_has" in c:
            got = json.loads(body)
            for want in c["json_has"]:
                if not any(subset(want, item) is None for item in got):
                    miss = f"no item like {json.dumps(want)} in {json.dumps(got)[:400]}"
        if miss:
            failures.append(f"{c['what']} ({c['method']} {c['path']}): {miss}")
    # Retained messages only: reading the session's queue would empty it.
    retained = mqtt_checks()[0]
    out = mosquitto("mosquitto_sub", port, OPERATOR, key, "-V", "5", "-i", retained["client_id"],
                    "-q", "1", "-t", retained["subscribe"], "-C", str(len(retained["messages"])),
                    "-W", "10", "-F", "%t %r %p")
    got = sorted(out.splitlines())
    want = sorted(f"{m['topic']} {int(m['retain'])} {m['payload']}" for m in retained["messages"])
    if got != want:
        failures.append(f"retained messages: {got} (wanted {want})")
    if failures:
        sys.exit(f"{engine}: the fixture does not answer as its manifest says:\n  "
                 + "\n  ".join(failures))
    print(f"{engine}: {len(checks())} checks and the retained messages answer as expected")


def manifest(work, out, version, commit, built):
    keys = {}
    for engine in ("sqlite", "postgres"):
        with open(os.path.join(work, f"{engine}.json")) as f:
            keys[engine] = json.load(f)["api_key"]
    doc = {
        "format": 1,
        "written_by": {"version": version, "commit": commit, "built": built},
        "matching": "`json`: the body holds this value (objects: each key given, recursively; "
                    "arrays: the same length, item by item; numbers compared as doubles). "
                    "`json_has`: each item given is held by some item of the body's array. "
                    "`sha256`/`length`: the body's bytes. MQTT `messages`: exactly these, "
                    "in any order, QoS 1.",
        "credentials": {
            "admin": {"username": "admin", "password": ADMIN_PASSWORD},
            "operator": {"username": OPERATOR, "password": OPERATOR_PASSWORD},
            "key": {"username": OPERATOR, "name": KEY_NAME, "sqlite": keys["sqlite"],
                    "postgres": keys["postgres"]},
        },
        "stores": {
            "sqlite": {"data_dir": "sqlite.tar.gz"},
            "postgres": {"dump": "postgres.sql.gz", "data_dir": "postgres-files.tar.gz"},
        },
        "counts": {"acme": {"products": 3, "docs": 1, "notes": 1, "tags": len(TAGS["acme"]),
                            "processes": 2, "flows": 2, "upstreams": 2},
                   "beta": {"sites": 1, "tags": len(TAGS["beta"])}},
        "checks": checks(),
        "mqtt": mqtt_checks(),
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "populate":
        populate(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif mode == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif mode == "manifest":
        manifest(*sys.argv[2:7])
    else:
        sys.exit(f"unknown mode {mode}")
