#!/usr/bin/env python3
"""Writes the Node-RED side of bench/connectors.sh into a Node-RED user directory: flows.json,
flows_cred.json (the MQTT credentials, unencrypted: `credentialSecret: false` in settings.js)
and settings.js.

    python3 bench/node_red_flows.py --dir DIR --http-port N --mqtt-port N --api-key KEY \
        --opcua-endpoint opc.tcp://127.0.0.1:N --items 10000 \
        --modbus-port N --registers 2000 [--poll-ms 100] [--prefix bench/plant]

The flows do the work svc's two connectors do, with the nodes a Node-RED user would take:

- OPC UA (node-red-contrib-opcua): one OpcUa-Client (action `subscribe`) per `--ua-split`
  variables, as svc has one connector per as many points (each client node has its own
  session and subscription; the node asks for at most 10 notifications per publish, so one
  subscription alone cannot carry 10,000 changes a second). Each is fed two messages at
  start. The first subscribes one item with `msg.interval` 1000, which creates the node's
  subscription with a 1 s publishing interval, as svc's connector has; the second (topic
  `multiple`) monitors its variables `ns=1;s=v<i>` in one group, with the sampling interval
  the node's `time` (0 ms: exception-based on the device). A function
  node turns each change into `{"value", "timestamp" (the source timestamp), "quality"}` on
  the tag `<prefix>/ua/v<i>`.
- Modbus (node-red-contrib-modbus): one Modbus-Client, and one Modbus-Read per 125 holding
  registers (the most one request may read, as svc's planner coalesces them), every
  `--poll-ms`. A function node per read keeps the last values (node context) and sends only
  the registers that changed (svc's deadband 0 does the same), as `{"value", "timestamp" (the
  time the answer arrived), "quality"}` on `<prefix>/mb/r<address>`.
- Both function nodes feed Node-RED's core `mqtt out`, QoS 0, to svc's MQTT broker (user
  `bench`, password an svc API key).
"""

import argparse
import json
import os


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--mqtt-port", type=int, required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--opcua-endpoint", required=True)
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--ua-split", type=int, default=1000)
    parser.add_argument("--modbus-port", type=int, required=True)
    parser.add_argument("--registers", type=int, default=2000)
    parser.add_argument("--poll-ms", type=int, default=100)
    parser.add_argument("--prefix", default="bench/plant")
    args = parser.parse_args()

    tab = "bench"
    nodes = [{"id": tab, "type": "tab", "label": "svc connectors bench", "disabled": False}]

    def node(id_, type_, x, y, **props):
        nodes.append({"id": id_, "type": type_, "z": tab, "x": x, "y": y, **props})

    # --- MQTT to svc ---------------------------------------------------------------------
    nodes.append({
        "id": "svc-broker", "type": "mqtt-broker", "name": "svc", "broker": "127.0.0.1",
        "port": str(args.mqtt_port), "clientid": "node-red-bench", "autoConnect": True,
        "usetls": False, "protocolVersion": "4", "keepalive": "60", "cleansession": True,
        "autoUnsubscribe": True, "birthTopic": "", "closeTopic": "", "willTopic": "",
        "sessionExpiry": "",
    })
    node("to-svc", "mqtt out", 900, 200, name="to svc", topic="", qos="0", retain="false",
         respTopic="", contentType="", userProps="", correl="", expiry="", broker="svc-broker",
         wires=[])

    # --- OPC UA ---------------------------------------------------------------------------
    nodes.append({
        "id": "ua-endpoint", "type": "OpcUa-Endpoint", "name": "device",
        "endpoint": args.opcua_endpoint, "secpol": "None", "secmode": "None", "none": True,
        "login": False, "usercert": False, "usercertificate": "", "userprivatekey": "",
    })
    # One OpcUa-Client per `--ua-split` items, as svc has one connector per as many points: each
    # client node has its own session and subscription.
    for group, first in enumerate(range(0, args.items, args.ua_split)):
        last = min(args.items, first + args.ua_split)
        subscribe = f"""
// First one item with interval 1000: the node creates its subscription with it (publishing
// interval 1 s); then the variables {first}..{last - 1} in one monitored group (sampling
// interval: the node's time, 0 ms).
node.send({{ topic: "ns=1;s=w0", interval: 1000 }});
const items = [];
for (let i = {first}; i < {last}; i++) items.push({{ nodeId: "ns=1;s=v" + i }});
setTimeout(() => node.send({{ topic: "multiple", payload: items }}), 3000);
return null;
"""
        y = 100 + 60 * group
        node(f"ua-start-{group}", "inject", 120, y, name="start", props=[], repeat="",
             crontab="", once=True, onceDelay="2", topic="", wires=[[f"ua-items-{group}"]])
        node(f"ua-items-{group}", "function", 300, y, name=f"items {first}..{last - 1}",
             func=subscribe, outputs=1, timeout=0, noerr=0, initialize="", finalize="",
             libs=[], wires=[[f"ua-client-{group}"]])
        node(f"ua-client-{group}", "OpcUa-Client", 500, y, name=f"device {group}",
             endpoint="ua-endpoint", action="subscribe", deadbandtype="a", deadbandvalue=1,
             time=0, timeUnit="ms", certificate="n", localfile="", localkeyfile="",
             securitymode="None", securitypolicy="None", useTransport=False, maxChunkCount=1,
             maxMessageSize=8192, receiveBufferSize=8192, sendBufferSize=8192,
             setstatusandtime=False, keepsessionalive=False, applicationName="",
             applicationUri="", wires=[["ua-format"], [], []])
    ua_format = f"""
// A group change carries the DataValue; the single item, its value and timestamps on msg.
let value, source, good;
if (msg.topic === "ns=1;s=w0" || msg.topic === "subscriptionId") return null;
const dv = msg.payload;
if (dv && dv.value !== undefined && dv.sourceTimestamp !== undefined) {{
    value = dv.value.value;
    source = dv.sourceTimestamp;
    good = dv.statusCode ? dv.statusCode.value === 0 : true;
}} else {{
    value = msg.payload;
    source = msg.sourceTimestamp;
    good = true;
}}
const name = String(msg.topic).split(";s=")[1];
msg.topic = "{args.prefix}/ua/" + name;
msg.payload = JSON.stringify({{
    value: value,
    timestamp: new Date(source).toISOString(),
    quality: good ? "good" : "bad",
}});
return msg;
"""
    node("ua-format", "function", 700, 100, name="tag value", func=ua_format, outputs=1,
         timeout=0, noerr=0, initialize="", finalize="", libs=[], wires=[["to-svc"]])

    # --- Modbus ---------------------------------------------------------------------------
    nodes.append({
        "id": "mb-client", "type": "modbus-client", "name": "device", "clienttype": "tcp",
        "bufferCommands": True, "stateLogEnabled": False, "queueLogEnabled": False,
        "failureLogEnabled": True, "tcpHost": "127.0.0.1", "tcpPort": str(args.modbus_port),
        "tcpType": "DEFAULT", "serialPort": "/dev/ttyUSB", "serialType": "RTU-BUFFERD",
        "serialBaudrate": "9600", "serialDatabits": "8", "serialStopbits": "1",
        "serialParity": "none", "serialConnectionDelay": "100",
        "serialAsciiResponseStartDelimiter": "0x3A", "unit_id": "1", "commandDelay": "1",
        "clientTimeout": "1000", "reconnectOnTimeout": True, "reconnectTimeout": "2000",
        "parallelUnitIdsAllowed": True,
    })
    for block, start in enumerate(range(0, args.registers, 125)):
        count = min(125, args.registers - start)
        read_id, changes_id = f"mb-read-{block}", f"mb-changes-{block}"
        node(read_id, "modbus-read", 120, 300 + 60 * block, name=f"hr {start}+{count}",
             topic="", showStatusActivities=False, logIOActivities=False, showErrors=False,
             unitid="1", dataType="HoldingRegister", adr=str(start), quantity=str(count),
             rate=str(args.poll_ms), rateUnit="ms", delayOnStart=False, startDelayTime="",
             server="mb-client", useIOFile=False, ioFile="", useIOForPayload=False,
             emptyMsgOnFail=False, wires=[[changes_id], []])
        changes = f"""
// The registers {start}..{start + count - 1} that changed since the last poll.
const last = context.get("last") || [];
const now = new Date().toISOString();
const out = [];
const values = msg.payload;
for (let i = 0; i < values.length; i++) {{
    if (last[i] === values[i]) continue;
    last[i] = values[i];
    out.push({{
        topic: "{args.prefix}/mb/r" + ({start} + i),
        payload: JSON.stringify({{ value: values[i], timestamp: now, quality: "good" }}),
    }});
}}
context.set("last", last);
return [out];
"""
        node(changes_id, "function", 400, 300 + 60 * block, name=f"changes {start}",
             func=changes, outputs=1, timeout=0, noerr=0, initialize="", finalize="", libs=[],
             wires=[["to-svc"]])

    os.makedirs(args.dir, exist_ok=True)
    with open(os.path.join(args.dir, "flows.json"), "w") as f:
        json.dump(nodes, f, indent=1)
    with open(os.path.join(args.dir, "flows_cred.json"), "w") as f:
        json.dump({"svc-broker": {"user": "bench", "password": args.api_key}}, f)
    # Node-RED's defaults but for the port, the log level and unencrypted credentials.
    with open(os.path.join(args.dir, "settings.js"), "w") as f:
        f.write(
            "module.exports = {\n"
            f"    uiPort: {args.http_port},\n"
            "    uiHost: '127.0.0.1',\n"
            "    flowFile: 'flows.json',\n"
            "    credentialSecret: false,\n"
            "    logging: { console: { level: 'warn', metrics: false, audit: false } },\n"
            "    functionExternalModules: false,\n"
            "};\n"
        )


if __name__ == "__main__":
    main()
