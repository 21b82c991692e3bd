# The report of bench/broker.sh: one markdown table with every measurement of svc, Mosquitto
# (and the baseline svc when set), the ratios, and the goals of issues 13 and 40 as pass/fail, each figure the median of its rounds with its
# spread, then the per-round values. Exits 0 when every goal that could be measured is met, 3 otherwise.
#
# Input lines (bench/broker.sh writes them):
#   BROKER LOAD QOS sent published received lost seconds msgs_per_s cpu_us_per_100 p50 p99 max send_rate steal_ms
#   idle BROKER connections held failed rss_before_kb rss_with_kb bytes_per_connection connect_seconds
#   queued BROKER sent published received lost rss_before_kb rss_with_kb bytes_per_message
#   memory BROKER vmrss_kb vmhwm_kb
#   historian svc rows expected
# Variables (-v): rounds, baseline (path or empty), pubs, q0, q1, subs, f0, f1, rate, idle, queued.

$1 == "idle" { held[$2] = $4; conns[$2] = $3; per_conn[$2] = $8; idle_secs[$2] = $9; next }
$1 == "queued" { queued_lost[$2] = $6; per_queued[$2] = $9; next }
$1 == "memory" { rss[$2] = $3; hwm[$2] = $4; next }
$1 == "historian" { hist = $3; hist_expected = $4; next }
{
    k = $1 " " $2 " " $3
    n[k]++
    line[k, n[k]] = $0
    lost[k] += $7
    sent_all[k] += $4
}

# stat(k, field, scale): the median, least and greatest of one field of load k over its rounds
# (each divided by scale) in med, lo and hi; "-" in all three when k was not measured.
function stat(k, field, scale,    i, j, t, v, x, c) {
    med = lo = hi = "-"
    # Asked first: reading n[k] would create it, and k would then look measured.
    if (!(k in n)) return
    c = 0
    for (i = 1; i <= n[k]; i++) {
        x = round_value(k, i, field, scale)
        if (has(x)) v[++c] = x
    }
    if (c == 0) return
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    med = (c % 2) ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
    lo = v[1]; hi = v[c]
}

# round_value(k, r, field, scale): one round's value of a field, "-" when not measured.
function round_value(k, r, field, scale,    f) {
    if (!(k in n) || r > n[k]) return "-"
    split(line[k, r], f, " ")
    return has(f[field]) ? f[field] / scale : "-"
}

function has(v) { return v != "" && v != "-" }

# cell(v, fmt, l, h): v formatted, with the spread over the rounds (l–h) when there was more
# than one round; — when it was not measured.
function cell(v, fmt, l, h,    number) {
    if (!has(v)) return "—"
    number = fmt
    sub(/ .*/, "", number)
    if (rounds > 1 && has(l) && l != h) return sprintf(fmt " (" number "–" number ")", v, l, h)
    return sprintf(fmt, v)
}

function ratio(a, b) { return (has(a) && has(b) && b + 0 > 0) ? sprintf("%.2fx", a / b) : "—" }

# figure(label, load, q, field, scale, fmt, goal, rule): one table line of a figure, each broker's
# median over the rounds with its spread. rule names the goal's test: "" (none), "ge<x>" (svc's
# median ≥ x × Mosquitto's), "lt" (svc's median < Mosquitto's), "le_rounds" (in every round,
# svc's value ≤ Mosquitto's in the same round).
function figure(label, load, q, field, scale, fmt, goal, rule,    s, m, b, sl, sh, ml, mh, bl, bh, verdict, r, sv, mv, ok, seen) {
    stat("svc " load " " q, field, scale); s = med; sl = lo; sh = hi
    stat("mosquitto " load " " q, field, scale); m = med; ml = lo; mh = hi
    stat("baseline " load " " q, field, scale); b = med; bl = lo; bh = hi
    verdict = ""
    if (rule != "" && has(s) && has(m)) {
        if (rule ~ /^ge/) verdict = (s >= substr(rule, 3) * m)
        else if (rule == "lt") verdict = (s < m)
        else {
            ok = 0; seen = 0
            for (r = 1; r <= n["svc " load " " q]; r++) {
                sv = round_value("svc " load " " q, r, field, scale)
                mv = round_value("mosquitto " load " " q, r, field, scale)
                if (!has(sv) || !has(mv)) continue
                seen++
                if (sv <= mv) ok++
            }
            verdict = (seen > 0 && ok == seen)
            goal = goal sprintf(" (%d of %d rounds)", ok, seen)
        }
    }
    row(label, cell(s, fmt, sl, sh), cell(m, fmt, ml, mh), ratio(s, m), cell(b, fmt, bl, bh), ratio(s, b), goal, verdict)
}

# row(label, s, m, sm, b, sb, goal, verdict): one table line of formatted cells; verdict is 1
# (pass), 0 (fail) or "" (no goal, or not measured).
function row(label, s, m, sm, b, sb, goal, verdict,    out, result) {
    out = sprintf("| %s | %s | %s | %s |", label, s, m, sm)
    if (baseline != "") out = out sprintf(" %s | %s |", b, sb)
    if (verdict == "") result = (goal == "") ? "" : "not measured"
    else {
        result = verdict ? "**pass**" : "**FAIL**"
        if (!verdict) failed++
        checked++
    }
    print out sprintf(" %s | %s |", goal, result)
}

# single(label, s, m, b, fmt, goal, verdict): a line of one-off values (memory, idle, losses).
function single(label, s, m, b, fmt, goal, verdict) {
    row(label, cell(s, fmt), cell(m, fmt), ratio(s, m), cell(b, fmt), ratio(s, b), goal, verdict)
}

function total_lost(broker, load, q,    k) {
    k = broker " " load " " q
    return (k in n) ? lost[k] : "-"
}

# lost_row(what, load, q): the messages each broker lost in that load over every round (goal 0).
function lost_row(what, load, q,    s) {
    s = total_lost("svc", load, q)
    single(what ": lost (all rounds)", s, total_lost("mosquitto", load, q), total_lost("baseline", load, q), "%d", "0", has(s) ? (s == 0) : "")
}

END {
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
            figure(what ": delivered msgs/s", load, q, 9, 1, "%.0f", sprintf("≥ %gx Mosquitto", need), "ge" need)
            figure(what ": broker CPU per message", load, q, 10, 100, "%.2f µs", "< Mosquitto", "lt")
            lost_row(what, load, q)
        }
    }
    for (q = 0; q <= 1; q++) {
        what = sprintf("latency QoS %d (%d msgs/s)", q, rate)
        figure(what ": p50 publish → deliver", "latency", q, 11, 1, "%.0f µs", "", "")
        figure(what ": p99 publish → deliver", "latency", q, 12, 1, "%.0f µs", "≤ Mosquitto every round", "le_rounds")
        figure(what ": rate sent", "latency", q, 14, 1, "%.0f msgs/s", "", "")
        figure(what ": broker CPU per message", "latency", q, 10, 100, "%.2f µs", "≤ Mosquitto every round", "le_rounds")
        lost_row(what, "latency", q)
    }
    what = sprintf("idle (%d connections, keep alive 60 s)", idle)
    s = has(held["svc"]) ? held["svc"] : "-"; m = has(held["mosquitto"]) ? held["mosquitto"] : "-"
    b = has(held["baseline"]) ? held["baseline"] : "-"
    single(what ": connections held", s, m, b, "%d", sprintf("all %d", idle), has(s) ? (s == idle) : "")
    s = has(per_conn["svc"]) ? per_conn["svc"] / 1024 : "-"
    m = has(per_conn["mosquitto"]) ? per_conn["mosquitto"] / 1024 : "-"
    b = has(per_conn["baseline"]) ? per_conn["baseline"] / 1024 : "-"
    single(what ": resident memory per connection", s, m, b, "%.1f KB", "≤ Mosquitto", (has(s) && has(m)) ? (s <= m) : "")
    if ("svc" in per_queued) {
        what = sprintf("queued (%d QoS 1 messages for a persistent subscriber away)", queued)
        s = queued_lost["svc"]; m = has(queued_lost["mosquitto"]) ? queued_lost["mosquitto"] : "-"
        b = has(queued_lost["baseline"]) ? queued_lost["baseline"] : "-"
        single(what ": lost", s, m, b, "%d", "0", has(s) ? (s == 0) : "")
        s = per_queued["svc"]; m = has(per_queued["mosquitto"]) ? per_queued["mosquitto"] : "-"
        b = has(per_queued["baseline"]) ? per_queued["baseline"] : "-"
        single(what ": resident memory per message", s, m, b, "%.0f B", "≤ Mosquitto", (has(s) && has(m)) ? (s <= m) : "")
    }
    s = has(rss["svc"]) ? rss["svc"] / 1024 : "-"; m = has(rss["mosquitto"]) ? rss["mosquitto"] / 1024 : "-"
    b = has(rss["baseline"]) ? rss["baseline"] / 1024 : "-"
    single("resident memory after the run (VmRSS)", s, m, b, "%.1f MB", "svc ≤ 64 MB", has(s) ? (s <= 64) : "")
    s = has(hwm["svc"]) ? hwm["svc"] / 1024 : "-"; m = has(hwm["mosquitto"]) ? hwm["mosquitto"] / 1024 : "-"
    b = has(hwm["baseline"]) ? hwm["baseline"] / 1024 : "-"
    single("peak resident memory (VmHWM)", s, m, b, "%.1f MB", "svc ≤ 100 MB", has(s) ? (s <= 100) : "")
    out = sprintf("| values in svc's historian (hot rows and blocks) | %d of %d | — | — |", hist, hist_expected)
    if (B) out = out " — | — |"
    verdict = hist >= hist_expected
    if (!verdict) failed++
    checked++
    print out sprintf(" all published | %s |", verdict ? "**pass**" : "**FAIL**")

    print ""
    printf "Goals met: %d of %d. Each figure is the median of its rounds, the spread over the rounds (least–greatest) in brackets; ratios are of the medians.\n", checked - failed, checked
    print ""
    printf "Every round (%d, in order; fan-in and fan-out: delivered msgs/s; latency: p99 µs; then broker CPU µs per message; for latency the CPU time the hypervisor took from the machine during the run, every CPU summed):\n\n", rounds
    split("mosquitto svc baseline", brokers, " ")
    split("fanin fanout latency", all_loads, " ")
    for (l = 1; l <= 3; l++) for (q = 0; q <= 1; q++) for (i = 1; i <= 3; i++) {
        k = brokers[i] " " all_loads[l] " " q
        if (!(k in n)) continue
        keys = ""; cpus = ""; steals = ""
        for (r = 1; r <= n[k]; r++) {
            keys = keys (r > 1 ? ", " : "") round_value(k, r, all_loads[l] == "latency" ? 12 : 9, 1)
            cpus = cpus (r > 1 ? ", " : "") sprintf("%.2f", round_value(k, r, 10, 100))
            steals = steals (r > 1 ? ", " : "") round_value(k, r, 15, 1)
        }
        printf "- %s, %s QoS %d: %s; CPU %s%s\n", brokers[i], all_loads[l], q, keys, cpus, all_loads[l] == "latency" ? "; host steal " steals " ms" : ""
    }
    for (i = 1; i <= 3; i++) if (brokers[i] in conns)
        printf "- %s, idle: %s of %s connections held, connected in %s s\n", brokers[i], held[brokers[i]], conns[brokers[i]], idle_secs[brokers[i]]
    for (k in n) {
        split(k, part, " ")
        if (part[1] == "mosquitto" && lost[k] > 0)
            printf "- Mosquitto lost %d of %d messages in %s QoS %s: its numbers there are not a clean reference\n", lost[k], sent_all[k], part[2], part[3]
        if (part[2] == "latency") for (r = 1; r <= n[k]; r++) {
            v = round_value(k, r, 14, 1)
            if (has(v) && v < 0.95 * rate)
                printf "- %s, latency QoS %s, round %d: sent %.0f msgs/s, below the %d asked (the publisher was held back)\n", part[1], part[3], r, v, rate
        }
    }
    if (B) printf "\nbaseline: `%s`\n", baseline
    exit failed ? 3 : 0
}
