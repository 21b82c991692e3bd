"""A second Sparkplug B edge node for the tests of svc's host-application role: PyPI's
mqtt-spb-wrapper 2.1.2 (paho-mqtt 1.6.1, protobuf 3.20.3), a Python implementation independent of
Eclipse Tahu's clients, installed by scripts/test.sh into $CARGO_TARGET_DIR/peers-venv. Driven by
tests/it/common/sparkplug_peer.rs with the same arguments, commands and events as
sparkplug_edge.cjs, for what the wrapper can do.

    python sparkplug_edge.py --url mqtt://127.0.0.1:1883 --username U --password P
                             --group G --node N [--client-id ID] [--match-bdseq]

Connects through the wrapper's MqttSpbEntityEdgeNode (MQTT 3.1.1, clean session, keepalive 60 s;
paho reconnects by itself), prints `ready 1` once connected, then takes one JSON command a line
on stdin and answers `{"ok":"<cmd>","topic":..,"seq":..}` once paho wrote the message, or
`{"error":"..."}`. Exits when stdin closes (the connection then drops, so the broker publishes
the will). Logs go to stderr.

Commands: nbirth, dbirth, ndata, ddata, ddeath, skip_seq, stop, drop (see sparkplug_edge.cjs).
Events: ncmd, dcmd (metrics as the wrapper parsed them: name, alias, timestamp, type, value, raw),
rebirth (an NCMD with Node Control/Rebirth = true; the peer does not rebirth by itself), state,
closed.

How the wrapper works, and what the tests must expect of it:
  - Metric names: births name each metric after the wrapper's group of it, data as "DATA/<name>"
    (attributes "ATTR/", commands "CMD/"), while NDATA/DDATA name it "<name>" alone. The NBIRTH
    always carries "CMD/Node Control/Rebirth" (Boolean false; true after a rebirth NCMD, which the
    wrapper stores). Names are always sent, with the alias when the metric has one.
  - Datatypes it can send: Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float,
    Double, Boolean, String, DateTime, Text, UUID, Bytes, File; DataSet only as columns of its own
    choosing from the first row (int -> Int64 in long_value, float -> Float, str -> String), so a
    DataSet here must declare only those column types. It can't send Template, PropertySet(List),
    metric properties, is_historical, is_transient, a null value, or alias-only metrics: those
    commands answer an error.
  - Signed integers are masked to their width before going into int_value: Int8 -12 is 244,
    Int16 -12 is 65524, Int32 -12 is 4294967284; Int64 goes two's-complement in long_value.
    UInt32 goes in int_value.
  - seq and bdSeq are module globals of mqtt_spb_wrapper.spb_protobuf.sparkplug_b shared by every
    entity of the process: NBIRTH resets seq to 0, each DBIRTH, NDATA and DDATA takes the next.
    bdSeq (Int64, not UInt64) is taken by every death payload the wrapper makes, and the node's
    will (topic NDEATH, QoS 1, not retained, no seq, no timestamp) takes 0 and leaves the counter
    at 1, which NBIRTH then carries: NBIRTH's bdSeq is one more than the will's (each device's
    connection takes one more). The wrapper's stop (disconnect) publishes an NDEATH with yet
    another bdSeq. --match-bdseq sets the counter back to the will's value before each NBIRTH, so
    NBIRTH and will agree as the specification requires. The bdSeq metric's timestamp is the time
    the wrapper was imported (a default argument); death payloads carry no payload timestamp.
  - Each device is an entity of its own with its own MQTT connection (client id <ID>-<device>)
    and its own will, a DDEATH carrying a bdSeq metric; `ddeath` disconnects it after publishing
    that DDEATH (no seq). `drop` cuts every connection of the peer; `stop` stops the devices,
    then the node.
  - STATE: the wrapper subscribes spBv1.0/<group>/STATE/+ (a topic no host uses); the peer adds
    spBv1.0/STATE/+ on the node's connection to report `state` events.
"""

import argparse
import base64
import json
import logging
import socket
import sys
import threading
import time
import urllib.parse

from mqtt_spb_wrapper import MetricDataType, MqttSpbEntityDevice, MqttSpbEntityEdgeNode
from mqtt_spb_wrapper.spb_protobuf import Payload, getSeqNum
from mqtt_spb_wrapper.spb_protobuf import sparkplug_b as counters  # the seq and bdSeq globals

TYPES = {
    name: getattr(MetricDataType, name)
    for name in dir(MetricDataType)
    if not name.startswith("_") and isinstance(getattr(MetricDataType, name), int)
}
TYPE_NAMES = {code: name for name, code in TYPES.items()}
INTEGERS = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"}
WIDE = {"Int64", "UInt64", "DateTime"}  # printed as strings, as the Node.js peers do
DATASET_COLUMNS = {"Int64": int, "Float": float, "String": str}

_print_lock = threading.Lock()


def out(obj):
    with _print_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def log(msg):
    print(f"sparkplug_edge.py: {msg}", file=sys.stderr, flush=True)


class Unsupported(Exception):
    pass


# ---- JSON -> the wrapper's values ---------------------------------------------------------------


def to_value(type_name, value):
    """A test's JSON value as the wrapper's MetricGroup.set_value takes it."""
    if value is None:
        raise Unsupported("the wrapper can't send a null value (set_value ignores None)")
    if type_name in INTEGERS or type_name == "DateTime":
        return int(value)
    if type_name in ("Float", "Double"):
        return float(value)
    if type_name == "Boolean":
        return bool(value)
    if type_name in ("String", "Text", "UUID"):
        return str(value)
    if type_name in ("Bytes", "File"):
        return base64.b64decode(value)
    if type_name == "DataSet":
        columns, types, rows = value["columns"], value["types"], value.get("rows", [])
        for t in types:
            if t not in DATASET_COLUMNS:
                raise Unsupported(f"the wrapper can't send a {t} DataSet column (only Int64, Float, String)")
        if not rows:
            raise Unsupported("the wrapper can't send an empty DataSet (it types columns from the first row)")
        data = {c: [DATASET_COLUMNS[types[i]](row[i]) for row in rows] for i, c in enumerate(columns)}
        if any(isinstance(v, int) and v < 0 for col in data.values() for v in col):
            # It puts the int as it is into the uint64 long_value: protobuf refuses a negative one.
            raise Unsupported("the wrapper can't send a negative Int64 in a DataSet")
        return data
    raise Unsupported(f"the wrapper can't send a {type_name} metric")


def set_metrics(group, metrics):
    """Sets the metrics M of a command into one of the wrapper's metric groups, all or none (a
    metric set stays in the group, and in every later birth)."""
    values = []
    for m in metrics:
        type_name = m.get("type")
        if type_name not in TYPES:
            raise Unsupported(f"unknown type {type_name!r}")
        if m.get("name") is None:
            raise Unsupported("the wrapper can't send an alias-only metric: it always names them")
        if m.get("properties"):
            raise Unsupported("the wrapper can't send metric properties")
        if m.get("is_historical") or m.get("is_transient"):
            raise Unsupported("the wrapper can't send is_historical or is_transient")
        values.append((m, to_value(type_name, m.get("value"))))
    for m, value in values:
        group.set_value(
            name=m["name"],
            value=value,
            timestamp=m.get("timestamp"),
            spb_alias_num=m.get("alias"),
            spb_data_type=TYPES[m["type"]],
            skip_callback=True,
        )


# ---- the wrapper's parsed payloads -> JSON ------------------------------------------------------


def snake(field):
    return "".join("_" + c.lower() if c.isupper() else c for c in field)


def metric_json(m):
    """A metric of the wrapper's SpbPayloadParser (protobuf MessageToDict plus "value")."""
    out_m = {}
    if "name" in m:
        out_m["name"] = m["name"]
    if "alias" in m:
        out_m["alias"] = int(m["alias"])
    if "timestamp" in m:
        out_m["timestamp"] = int(m["timestamp"])
    code = m.get("datatype", 0)
    type_name = TYPE_NAMES.get(code, code)
    out_m["type"] = type_name
    field = next((k for k in m if k.endswith("Value")), None)
    value = m.get("value")
    if field is None or m.get("isNull"):
        value = None
    elif type_name == "DateTime":
        value = str(m[field])  # the wrapper makes a local datetime of it: take the wire value
    elif type_name in WIDE:
        value = str(value)
    elif isinstance(value, (bytes, bytearray)):
        value = base64.b64encode(value).decode()
    out_m["value"] = value
    out_m["is_historical"] = bool(m.get("isHistorical"))
    out_m["is_transient"] = bool(m.get("isTransient"))
    out_m["is_null"] = bool(m.get("isNull"))
    if "properties" in m:
        out_m["properties"] = m["properties"].get("key_value", {})
    out_m["raw"] = {snake(field): m[field]} if field else {}
    return out_m


# ---- the peer -----------------------------------------------------------------------------------


class Peer:
    def __init__(self, args):
        url = urllib.parse.urlparse(args.url)
        self.host, self.port = url.hostname, url.port or 1883
        self.user, self.password = args.username, args.password
        self.group, self.node_name = args.group, args.node
        self.client_id = args.client_id or f"wrapper-{args.group}-{args.node}"
        self.match_bdseq = args.match_bdseq
        self.will_bdseq = None
        self.devices = {}
        self.node = MqttSpbEntityEdgeNode(self.group, self.node_name)
        # The wrapper registers the result of calling publish_birth() (False: not connected yet) as
        # the callback of its Node Control/Rebirth command, so a rebirth NCMD raises "'bool' object
        # is not callable" in paho's thread and kills it. No callback: the peer reports the
        # command, the test decides.
        self.node.commands.set_callback("Node Control/Rebirth", None)
        self.node.on_command = lambda payload: self.on_command("ncmd", None, payload)
        self.node.on_connect = lambda rc: self.no_delay(self.node)
        self.node.on_disconnect = lambda rc: out({"event": "closed"})

    @staticmethod
    def no_delay(entity):
        # Nagle's algorithm would hold a message back while an earlier segment is unacknowledged,
        # so a message answered `ok` could reach the broker after one another client sent later.
        sock = entity._mqtt.socket() if entity._mqtt else None
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connect(self, entity, client_id):
        if not entity.connect(self.host, self.port, self.user, self.password, client_id=client_id, timeout=10):
            raise RuntimeError(f"{client_id} could not connect to {self.host}:{self.port}")
        # An exception in a callback (the wrapper's or ours) would end paho's network thread
        # silently: log it to stderr and go on.
        entity._mqtt.suppress_exceptions = True
        entity._mqtt.enable_logger(logging.getLogger(f"paho.{client_id}"))

    def start(self):
        self.will_bdseq = counters.bdSeq  # what the will connect() encodes is about to take
        self.connect(self.node, self.client_id)
        client = self.node._mqtt
        client.message_callback_add("spBv1.0/STATE/+", self.on_state)
        # SUBACKs of the wrapper's own subscriptions may come in too: wait for ours by its mid.
        acked = set()
        client.on_subscribe = lambda c, userdata, mid, granted: acked.add(mid)
        _, mid = client.subscribe("spBv1.0/STATE/+", qos=1)
        deadline = time.monotonic() + 10
        while mid not in acked:
            if time.monotonic() > deadline:
                raise RuntimeError("no SUBACK for spBv1.0/STATE/+")
            time.sleep(0.01)
        log(f"{self.client_id} connected to {self.host}:{self.port} as {self.group}/{self.node_name}")

    def on_state(self, client, userdata, msg):
        out({"event": "state", "topic": msg.topic, "payload": msg.payload.decode("utf-8", "replace")})

    def on_command(self, kind, device, payload):
        event = {"event": kind}
        if device is not None:
            event["device"] = device
        if "seq" in payload:
            event["seq"] = int(payload["seq"])
        if "timestamp" in payload:
            event["timestamp"] = int(payload["timestamp"])
        event["metrics"] = [metric_json(m) for m in payload.get("metrics", [])]
        out(event)
        if kind == "ncmd" and any(
            m.get("name") == "Node Control/Rebirth" and m.get("value") is True for m in event["metrics"]
        ):
            out({"event": "rebirth"})

    def published(self, entity, action):
        """Runs a wrapper publish on `entity` and waits until paho wrote it; (topic, seq)."""
        client = entity._mqtt
        if client is None or not client.is_connected():
            raise RuntimeError("not connected")
        sent = []
        original = client.publish

        def publish(topic, payload=None, qos=0, retain=False, properties=None):
            info = original(topic, payload, qos, retain, properties)
            sent.append((topic, payload, info))
            return info

        client.publish = publish  # shadows the method on this instance for the one call
        try:
            result = action()
        finally:
            del client.publish
        if result is False or not sent:
            raise RuntimeError("the wrapper published nothing (see its log)")
        topic, payload, info = sent[-1]
        info.wait_for_publish(10)
        if not info.is_published():
            raise RuntimeError(f"{topic} not written within 10 s")
        seq = Payload.FromString(bytes(payload)).seq if payload else None
        return {"topic": topic, "seq": seq}

    def device(self, cmd, create=False):
        name = cmd.get("device")
        if not isinstance(name, str):
            raise Unsupported(f'{cmd["cmd"]} needs "device"')
        if name not in self.devices:
            if not create:
                raise Unsupported(f"no device {name!r} (dbirth it first)")
            entity = MqttSpbEntityDevice(self.group, self.node_name, name)
            entity.on_command = lambda payload: self.on_command("dcmd", name, payload)
            entity.on_connect = lambda rc: self.no_delay(entity)
            self.connect(entity, f"{self.client_id}-{name}")
            self.devices[name] = entity
        return self.devices[name]

    def run(self, cmd):
        kind = cmd.get("cmd")
        if kind == "nbirth":
            set_metrics(self.node.data, cmd.get("metrics", []))
            if self.match_bdseq:
                counters.bdSeq = self.will_bdseq
            return self.published(self.node, self.node.publish_birth)
        if kind == "dbirth":
            entity = self.device(cmd, create=True)
            set_metrics(entity.data, cmd.get("metrics", []))
            return self.published(entity, entity.publish_birth)
        if kind == "ndata":
            set_metrics(self.node.data, cmd.get("metrics", []))
            return self.published(self.node, self.node.publish_data)
        if kind == "ddata":
            entity = self.device(cmd)
            set_metrics(entity.data, cmd.get("metrics", []))
            return self.published(entity, entity.publish_data)
        if kind == "ddeath":
            entity = self.device(cmd)
            del self.devices[cmd["device"]]
            entity.disconnect()  # publishes DDEATH, then DISCONNECT
            return {}
        if kind == "skip_seq":
            # The wrapper's sequence counter is a module global that getSeqNum advances (wrapping
            # at 256): taking one number leaves a gap before the next message.
            return {"skipped": getSeqNum()}
        if kind == "stop":
            for name in list(self.devices):
                self.devices.pop(name).disconnect()
            self.node.disconnect()  # publishes NDEATH, then DISCONNECT
            return {}
        if kind == "drop":
            for entity in [*self.devices.values(), self.node]:
                self.drop(entity)
            self.devices.clear()
            return {}
        raise Unsupported(f"unknown command {kind!r}")

    @staticmethod
    def drop(entity):
        # Stop paho's thread first (it would reconnect), then end the TCP connection with no
        # DISCONNECT: the broker publishes the will.
        client = entity._mqtt
        if client is None:
            return
        client.loop_stop()
        sock = client.socket()
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        entity._mqtt = None
        out({"event": "closed"})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--username", default="")
    parser.add_argument("--password", default="")
    parser.add_argument("--group", required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("--client-id", default=None)
    parser.add_argument("--match-bdseq", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="sparkplug_edge.py: %(name)s: %(message)s")

    peer = Peer(args)
    try:
        peer.start()
    except Exception as e:  # refused, unreachable: the harness sees the exit
        out({"error": f"connect: {e}"})
        sys.exit(1)
    with _print_lock:
        sys.stdout.write("ready 1\n")
        sys.stdout.flush()

    # One command at a time, in order, so each answer follows its command.
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = None
        try:
            cmd = json.loads(line)
            out({"ok": cmd.get("cmd"), **peer.run(cmd)})
        except Exception as e:
            out({"error": f"{cmd.get('cmd') if isinstance(cmd, dict) else line.strip()}: {e}"})
    # Standard input closed: the test is over (or died). Leave as a killed node would: paho's
    # thread is a daemon, the socket closes with the process, the broker publishes the will.
    sys.exit(0)


if __name__ == "__main__":
    main()
