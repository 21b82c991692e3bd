# The report of bench/broker.sh: one markdown table with every measurement of svc, Mosquitto
# (and the baseline svc when set), the ratios, and the goals of issue 13 as pass/fail, then the
# per-round values. Exits 0 when every goal that could be measured is met, 3 otherwise.
#
# Input lines (bench/broker.sh writes them):
#   BROKER LOAD QOS sent published received lost seconds msgs_per_s cpu_us_per_100 p50 p99 max send_rate
#   idle BROKER connections held failed rss_before_kb rss_with_kb bytes_per_connection connect_seconds
#   memory BROKER vmrss_kb vmhwm_kb
#   historian svc rows expected
# Variables (-v): rounds, baseline (path or empty), pubs, q0, q1, subs, f0, f1, rate, idle.

$1 == "idle" { held[$2] = $4; conns[$2] = $3; per_conn[$2] = $8; idle_secs[$2] = $9; next }
$1 == "memory" { rss[$2] = $3; hwm[$2] = $4; next }
$1 == "historian" { hist = $3; hist_expected = $4; next }
{
    k = $1 " " $2 " " $3
    n[k]++
    line[k, n[k]] = $0
    # The round shown is the median of the load's key number: msgs/s, or p99 for latency.
    key[k, n[k]] = ($2 == "latency") ? $12 : $9
    lost[k] += $7
    sent_all[k] += $4
}

# pick(k): fills shown[k, field] from the round with the median key number.
function pick(k,    i, j, t, idx, f, m) {
    for (i = 1; i <= n[k]; i++) idx[i] = i
    for (i = 1; i <= n[k]; i++) for (j = i + 1; j <= n[k]; j++)
        if (key[k, idx[j]] + 0 < key[k, idx[i]] + 0) { t = idx[i]; idx[i] = idx[j]; idx[j] = t }
    m = split(line[k, idx[int((n[k] + 1) / 2)]], f, " ")
    for (i = 1; i <= m; i++) shown[k, i] = f[i]
    rounds_of[k] = ""
    for (i = 1; i <= n[k]; i++) rounds_of[k] = rounds_of[k] (i > 1 ? ", " : "") key[k, i]
}

function has(v) { return v != "" && v != "-" }

# cell(v, fmt): v formatted, or — when it was not measured.
function cell(v, fmt) { return has(v) ? sprintf(fmt, v) : "—" }

function ratio(a, b) { return (has(a) && has(b) && b + 0 > 0) ? sprintf("%.2fx", a / b) : "—" }

# row(label, s, m, b, fmt, goal, verdict): one table line; verdict is 1 (pass), 0 (fail) or
# "" (no goal, or not measured).
function row(label, s, m, b, fmt, goal, verdict,    out) {
    out = sprintf("| %s | %s | %s | %s |", label, cell(s, fmt), cell(m, fmt), ratio(s, m))
    if (baseline != "") out = out sprintf(" %s | %s |", cell(b, fmt), ratio(s, b))
    if (verdict == "") result = (goal == "") ? "" : "not measured"
    else {
        result = verdict ? "**pass**" : "**FAIL**"
        if (!verdict) failed++
        checked++
    }
    print out sprintf(" %s | %s |", goal, result)
}

# judge(ok, a, b): ok when both a and b were measured, else "" (not measured).
function judge(ok, a, b) { return (has(a) && has(b)) ? (ok ? 1 : 0) : "" }

function value(broker, load, q, field,    k) {
    k = broker " " load " " q
    return (k in n) ? shown[k, field] : "-"
}

function total_lost(broker, load, q,    k) {
    k = broker " " load " " q
    return (k in n) ? lost[k] : "-"
}

END {
    for (k in n) pick(k)
    B = (baseline != "")
    printf "| measurement | svc | Mosquitto | svc / Mosquitto |%s goal | result |\n", B ? " baseline | svc / baseline |" : ""
    printf "|---|---:|---:|---:|%s---|---|\n", B ? "---:|---:|" : ""

    split("fanin fanout", loads, " ")
    for (l = 1; l <= 2; l++) {
        load = loads[l]
        for (q = 0; q <= 1; q++) {
            if (load == "fanin") {
                what = sprintf("fan-in QoS %d (%d×%d → 1)", q, pubs, q == 0 ? q0 : q1)
                need = q == 0 ? 2 : 3
            } else {
                what = sprintf("fan-out QoS %d (1 → %d, %d msgs)", q, subs, q == 0 ? f0 : f1)
                need = 1.5
            }
            s = value("svc", load, q, 9); m = value("mosquitto", load, q, 9); b = value("baseline", load, q, 9)
            row(what ": delivered msgs/s", s, m, b, "%.0f", sprintf("≥ %gx Mosquitto", need), judge(s >= need * m, s, m))
            s = value("svc", load, q, 10); m = value("mosquitto", load, q, 10); b = value("baseline", load, q, 10)
            if (has(s)) s /= 100
            if (has(m)) m /= 100
            if (has(b)) b /= 100
            row(what ": broker CPU per message", s, m, b, "%.2f µs", "< Mosquitto", judge(s < m, s, m))
            s = total_lost("svc", load, q); m = total_lost("mosquitto", load, q); b = total_lost("baseline", load, q)
            row(what ": lost (all rounds)", s, m, b, "%d", "0", has(s) ? (s == 0) : "")
        }
    }
    for (q = 0; q <= 1; q++) {
        what = sprintf("latency QoS %d (%d msgs/s)", q, rate)
        s = value("svc", "latency", q, 11); m = value("mosquitto", "latency", q, 11); b = value("baseline", "latency", q, 11)
        row(what ": p50 publish → deliver", s, m, b, "%.0f µs", "", "")
        s = value("svc", "latency", q, 12); m = value("mosquitto", "latency", q, 12); b = value("baseline", "latency", q, 12)
        row(what ": p99 publish → deliver", s, m, b, "%.0f µs", "≤ Mosquitto", judge(s <= m, s, m))
        s = value("svc", "latency", q, 14); m = value("mosquitto", "latency", q, 14); b = value("baseline", "latency", q, 14)
        row(what ": rate sent", s, m, b, "%.0f msgs/s", "", "")
        s = value("svc", "latency", q, 10); m = value("mosquitto", "latency", q, 10); b = value("baseline", "latency", q, 10)
        if (has(s)) s /= 100
        if (has(m)) m /= 100
        if (has(b)) b /= 100
        row(what ": broker CPU per message", s, m, b, "%.2f µs", "< Mosquitto", judge(s < m, s, m))
        s = total_lost("svc", "latency", q); m = total_lost("mosquitto", "latency", q); b = total_lost("baseline", "latency", q)
        row(what ": lost (all rounds)", s, m, b, "%d", "0", has(s) ? (s == 0) : "")
    }
    what = sprintf("idle (%d connections, keep alive 60 s)", idle)
    s = has(held["svc"]) ? held["svc"] : "-"; m = has(held["mosquitto"]) ? held["mosquitto"] : "-"
    b = has(held["baseline"]) ? held["baseline"] : "-"
    row(what ": connections held", s, m, b, "%d", sprintf("all %d", idle), has(s) ? (s == idle) : "")
    s = has(per_conn["svc"]) ? per_conn["svc"] / 1024 : "-"
    m = has(per_conn["mosquitto"]) ? per_conn["mosquitto"] / 1024 : "-"
    b = has(per_conn["baseline"]) ? per_conn["baseline"] / 1024 : "-"
    row(what ": resident memory per connection", s, m, b, "%.1f KB", "≤ Mosquitto", judge(s <= m, s, m))
    s = has(rss["svc"]) ? rss["svc"] / 1024 : "-"; m = has(rss["mosquitto"]) ? rss["mosquitto"] / 1024 : "-"
    b = has(rss["baseline"]) ? rss["baseline"] / 1024 : "-"
    row("resident memory after the run (VmRSS)", s, m, b, "%.1f MB", "svc ≤ 64 MB", has(s) ? (s <= 64) : "")
    s = has(hwm["svc"]) ? hwm["svc"] / 1024 : "-"; m = has(hwm["mosquitto"]) ? hwm["mosquitto"] / 1024 : "-"
    b = has(hwm["baseline"]) ? hwm["baseline"] / 1024 : "-"
    row("peak resident memory (VmHWM)", s, m, b, "%.1f MB", "svc ≤ 100 MB", has(s) ? (s <= 100) : "")
    out = sprintf("| values in svc's historian (hot rows and blocks) | %d of %d | — | — |", hist, hist_expected)
    if (B) out = out " — | — |"
    verdict = hist >= hist_expected
    if (!verdict) failed++
    checked++
    print out sprintf(" all published | %s |", verdict ? "**pass**" : "**FAIL**")

    print ""
    printf "Goals met: %d of %d.\n", checked - failed, checked
    print ""
    printf "Every round (%d; fan-in and fan-out: delivered msgs/s; latency: p99 µs):\n\n", rounds
    split("mosquitto svc baseline", brokers, " ")
    split("fanin fanout latency", all_loads, " ")
    for (l = 1; l <= 3; l++) for (q = 0; q <= 1; q++) for (i = 1; i <= 3; i++) {
        k = brokers[i] " " all_loads[l] " " q
        if (k in n) printf "- %s, %s QoS %d: %s\n", brokers[i], all_loads[l], q, rounds_of[k]
    }
    for (i = 1; i <= 3; i++) if (brokers[i] in conns)
        printf "- %s, idle: %s of %s connections held, connected in %s s\n", brokers[i], held[brokers[i]], conns[brokers[i]], idle_secs[brokers[i]]
    for (k in n) {
        split(k, part, " ")
        if (part[1] == "mosquitto" && lost[k] > 0)
            printf "- Mosquitto lost %d of %d messages in %s QoS %s: its numbers there are not a clean reference\n", lost[k], sent_all[k], part[2], part[3]
        if (part[2] == "latency" && has(shown[k, 14]) && shown[k, 14] < 0.95 * rate)
            printf "- %s, latency QoS %s: the shown round sent %.0f msgs/s, below the %d asked (the publisher was held back)\n", part[1], part[3], shown[k, 14], rate
    }
    if (B) printf "\nbaseline: `%s`\n", baseline
    exit failed ? 3 : 0
}
