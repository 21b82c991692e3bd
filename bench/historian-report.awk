# The report of bench/historian.sh: markdown tables of the plant data set's bytes per point on
# every system, of ingest and raw reads against raw SQLite and VictoriaMetrics, and of the year
# chart, then every goal as met or missed. Exits 0 when every goal that was measured is met, 3
# otherwise. A part the run left out (BENCH_PARTS) prints nothing and its goals "not run".
#
# Input lines (bench/historian.sh writes them):
#   plant SYSTEM SET BYTES POINTS        SET numeric or all; one line per system and set
#   <measurement> RATE SECONDS          a round of ingest_*, load_*, query_*, page_*, vm_export
#                                       (*_base: the baseline svc, BENCH_SVC_BASELINE)
#   ingest_lag MS PUBLISH_SECONDS
#   year_svc RATE SECONDS / year_vm RATE SECONDS    the year's ingest
#   chart_svc P50 P99 MAX N / chart_vm P50 P99 MAX N    the year chart: ms, charts drawn
#   query_base, page_base, chart_base, chart_svc2    the same with BENCH_SVC_BASELINE (svc's
#                                       second series of charts runs after the baseline's)
# Variables (-v): n_ingest, n_points, page (svc's page), one_page (the single request), rss, hwm (kB), per_signal, year_points,
# year_queries, sdt (the SDT row's note when it was not measured, else empty), baseline (the
# baseline binary's path, or empty).

$1 == "plant" { bytes[$2, $3] = $4; points[$2, $3] = $5; next }
$1 ~ /^chart_/ { p50[$1] = $2; p99[$1] = $3; pmax[$1] = $4; drawn[$1] = $5; next }
{ k = $1; c[k]++; r[k, c[k]] = $2; s[k, c[k]] = $3 }

# pick(k): rate[k] and secs[k] of the round with the median rate; all[k] every round's rate.
function pick(k,    i, j, t, idx) {
    for (i = 1; i <= c[k]; i++) idx[i] = i
    for (i = 1; i <= c[k]; i++) for (j = i + 1; j <= c[k]; j++)
        if (r[k, idx[j]] + 0 < r[k, idx[i]] + 0) { t = idx[i]; idx[i] = idx[j]; idx[j] = t }
    rate[k] = r[k, idx[int((c[k] + 1) / 2)]]; secs[k] = s[k, idx[int((c[k] + 1) / 2)]]
    all[k] = ""
    for (i = 1; i <= c[k]; i++) all[k] = all[k] (i > 1 ? ", " : "") r[k, i]
}

function row(name, k, unit, ref) {
    if (!c[k]) return
    pick(k)
    if (ref != "") pick(ref)
    printf "| %s | %.0f %s | %s | %.3f s | %s |\n", name, rate[k], unit, all[k], secs[k], \
        (ref == "" || !c[ref]) ? "" : sprintf("**%.2fx**", rate[k] / rate[ref])
}

function per_point(sys, set) { return bytes[sys, set] / points[sys, set] }

function plant_row(sys, name, counted,    n, a) {
    if (!((sys, "numeric") in bytes)) return
    n = sprintf("%d | %.3f", bytes[sys, "numeric"], per_point(sys, "numeric"))
    a = ((sys, "all") in bytes) ? sprintf("%d | %.3f", bytes[sys, "all"], per_point(sys, "all")) : "— | —"
    printf "| %s | %s | %s | %s | %s |\n", name, n, \
        (("victoriametrics", "numeric") in bytes) ? sprintf("%.2fx", per_point(sys, "numeric") / per_point("victoriametrics", "numeric")) : "", \
        a, counted
}

# goal(text, measured, ok): one goal line; a measured miss makes the exit status 3.
function goal(text, measured, ok) {
    if (!measured) { printf "- %s → not run\n", text; return }
    printf "- %s → %s\n", text, ok ? "**met**" : "**NOT met**"
    if (!ok) missed = 1
}

END {
    if (("victoriametrics", "numeric") in bytes) {
        printf "### Plant data set: bytes on disk per point\n\n"
        printf "%d points per signal, 1 Hz: the %d numeric signals (five walks, counter, flag, setpoint, analog) = %d points, all ten signals (with the string state) = %d points.\n\n", \
            per_signal, points["victoriametrics", "numeric"] / per_signal, points["victoriametrics", "numeric"], points["svc_sqlite", "all"]
        print "| system | numeric: bytes | numeric: bytes/point | numeric: / VictoriaMetrics | all: bytes | all: bytes/point | what is counted |"
        print "|---|---:|---:|---:|---:|---:|---|"
        plant_row("svc_sqlite", "svc, SQLite (lossless)", "pages of every `hist_*` table and its indexes (`dbstat`), after the settle")
        plant_row("svc_postgres", "svc, PostgreSQL (lossless)", "`pg_total_relation_size` of every `hist_*` table with its partitions, indexes and TOAST, after the settle and a plain `VACUUM`")
        plant_row("svc_sqlite_sdt", "svc, SQLite, swinging door 0.1 % of span", "as svc, SQLite; points = the points published")
        plant_row("victoriametrics", "VictoriaMetrics 1.79 (lossless, 64-bit precision)", "every file under `-storageDataPath`, after `/internal/force_flush` and `/internal/force_merge`")
        plant_row("influxdb", "InfluxDB 1.6 (lossless)", "shard files (TSM, `fields.idx`) and WAL, after the cache snapshot and full compaction; the database's preallocated series file left out")
        plant_row("prometheus", "Prometheus 2.42 TSDB (lossless)", "every file of the blocks `promtool tsdb create-blocks-from openmetrics` wrote (31-day blocks)")
        print ""
    }
    if (c["query_svc"] || c["ingest_svc"]) {
        printf "### Ingest and the raw range read\n\n"
        print "| measurement | rate (median) | all rounds | seconds | ratio |"
        print "|---|---:|---|---:|---:|"
        row(sprintf("ingest: raw rusqlite, %d rows in transactions of 5,000", n_ingest), "ingest_raw", "values/s", "")
        row(sprintf("ingest: raw rusqlite with svc's statement (`ON CONFLICT DO NOTHING`, `BEGIN IMMEDIATE`)"), "ingest_raw_svc_sql", "values/s", "")
        row(sprintf("ingest: svc, %d QoS 1 publishes → stored (payload timestamps); ratio to raw", n_ingest), "ingest_svc", "values/s", "ingest_raw")
        row(sprintf("ingest: svc, %d QoS 1 publishes → stored (receive-time timestamps; no goal)", n_ingest), "ingest_svc_rt", "values/s", "ingest_raw")
        if (c["ingest_base"]) {
            row(sprintf("ingest: baseline `%s`, the same (payload timestamps)", baseline), "ingest_base", "values/s", "")
            row("ingest: svc (payload timestamps); ratio to the baseline", "ingest_svc", "values/s", "ingest_base")
            row("ingest: baseline, receive-time timestamps", "ingest_base_rt", "values/s", "")
            row("ingest: svc (receive-time timestamps); ratio to the baseline", "ingest_svc_rt", "values/s", "ingest_base_rt")
        }
        row(sprintf("load: svc, %d QoS 1 publishes → stored (the query data)", n_points), "load_svc", "values/s", "")
        row(sprintf("load: baseline, the same"), "load_base", "values/s", "")
        row(sprintf("query: raw SQLite scan of %d rows", n_points), "query_raw", "points/s", "")
        row(sprintf("query: VictoriaMetrics `/api/v1/export` of the same %d points", n_points), "vm_export", "points/s", "")
        row(sprintf("query: svc `PATCH /svc/historian`, %d points in pages of %d; ratio to raw", n_points, page), "query_svc", "points/s", "query_raw")
        row(sprintf("query: svc, the same; ratio to VictoriaMetrics"), "query_svc", "points/s", "vm_export")
        if (c["query_base"]) {
            row(sprintf("query: baseline, %d points in pages of %d", n_points, page), "query_base", "points/s", "")
            row("query: svc, the same; ratio to the baseline", "query_svc", "points/s", "query_base")
            row(sprintf("query: baseline, one request of %d points", one_page), "page_base", "points/s", "")
            row("query: svc, one request; ratio to the baseline", "page_svc", "points/s", "page_base")
        }
        row(sprintf("query: raw SQLite scan of %d rows", one_page), "page_raw", "points/s", "")
        row(sprintf("query: svc `PATCH /svc/historian`, one request of %d points; ratio to raw", one_page), "page_svc", "points/s", "page_raw")
        print ""
        if (c["ingest_lag"]) {
            pick("ingest_lag")
            printf "- svc ingest, median round: the last PUBACK arrived %.3f s after the first publish, the last value was stored %d ms later\n", secs["ingest_lag"], rate["ingest_lag"]
        }
        if (rss) printf "- svc resident memory after the run: %.1f MB (peak %.1f MB)\n", rss / 1024, hwm / 1024
        print ""
    }
    if (c["year_svc"] || ("chart_svc" in p99)) {
        printf "### A year of one tag: %d points at 1 Hz, drawn as 500 buckets of min, mean and max\n\n", year_points
        print "| system | ingest | ingest seconds | charts drawn | chart p50 | chart p99 | slowest chart | p99 / VictoriaMetrics |"
        print "|---|---:|---:|---:|---:|---:|---:|---:|"
        pick("year_svc"); pick("year_vm")
        printf "| svc (SQLite): MQTT QoS 1 → stored; `PATCH /svc/historian` ×3 | %.0f values/s | %.1f s | %d of %d | %.1f ms | %.1f ms | %.1f ms | **%.2fx** |\n", rate["year_svc"], secs["year_svc"], drawn["chart_svc"], year_queries, p50["chart_svc"], p99["chart_svc"], pmax["chart_svc"], p99["chart_svc"] / p99["chart_vm"]
        printf "| VictoriaMetrics: `/api/v1/import` answered; `query_range` ×3 | %.0f values/s | %.1f s | %d of %d | %.1f ms | %.1f ms | %.1f ms | |\n", rate["year_vm"], secs["year_vm"], drawn["chart_vm"], year_queries, p50["chart_vm"], p99["chart_vm"], pmax["chart_vm"]
        if ("chart_base" in p99) {
            printf "| baseline svc (BENCH_SVC_BASELINE), same data; `PATCH /svc/historian` ×3 | | | %d of %d | %.1f ms | %.1f ms | %.1f ms | |\n", drawn["chart_base"], year_queries, p50["chart_base"], p99["chart_base"], pmax["chart_base"]
            printf "| svc again, after the baseline; p99 / the baseline's | | | %d of %d | %.1f ms | %.1f ms | %.1f ms | **%.2fx** |\n", drawn["chart_svc2"], year_queries, p50["chart_svc2"], p99["chart_svc2"], pmax["chart_svc2"], p99["chart_svc2"] / p99["chart_base"]
        }
        printf "\nEach after one untimed chart; p99 by nearest rank (below 100 charts, the slowest).\n\n"
    }

    print "### Goals"
    print ""
    m = ("svc_sqlite", "numeric") in bytes && ("victoriametrics", "numeric") in bytes
    goal(m ? sprintf("svc on SQLite at or below VictoriaMetrics in bytes per point, numeric signals, lossless: %.3f / %.3f = %.2fx", per_point("svc_sqlite", "numeric"), per_point("victoriametrics", "numeric"), per_point("svc_sqlite", "numeric") / per_point("victoriametrics", "numeric")) : "svc on SQLite at or below VictoriaMetrics in bytes per point", m, m && per_point("svc_sqlite", "numeric") <= per_point("victoriametrics", "numeric"))
    m = ("svc_postgres", "numeric") in bytes && ("svc_sqlite", "numeric") in bytes
    goal(m ? sprintf("svc on PostgreSQL at most 2x svc on SQLite, numeric signals: %.3f / %.3f = %.2fx", per_point("svc_postgres", "numeric"), per_point("svc_sqlite", "numeric"), per_point("svc_postgres", "numeric") / per_point("svc_sqlite", "numeric")) : "svc on PostgreSQL at most 2x svc on SQLite", m, m && per_point("svc_postgres", "numeric") <= 2 * per_point("svc_sqlite", "numeric"))
    m = ("svc_sqlite_sdt", "numeric") in bytes && ("svc_sqlite", "numeric") in bytes
    if (m) goal(sprintf("swinging door at 0.1 %% of span at most 1/4 of lossless (SQLite, numeric): %.3f / %.3f = %.2fx", per_point("svc_sqlite_sdt", "numeric"), per_point("svc_sqlite", "numeric"), per_point("svc_sqlite_sdt", "numeric") / per_point("svc_sqlite", "numeric")), 1, per_point("svc_sqlite_sdt", "numeric") <= 0.25 * per_point("svc_sqlite", "numeric"))
    else printf "- swinging door at 0.1 %% of span at most 1/4 of lossless → %s\n", sdt == "" ? "not run (BENCH_PLANT_SDT=1 runs it in part plant)" : sdt
    m = c["query_svc"] && c["vm_export"]
    if (m) { pick("query_svc"); pick("vm_export") }
    goal(m ? sprintf("raw range read through svc at or above VictoriaMetrics's export: %.2fx", rate["query_svc"] / rate["vm_export"]) : "raw range read through svc at or above VictoriaMetrics's export", m, m && rate["query_svc"] >= rate["vm_export"])
    m = c["query_svc"] && c["query_raw"]
    if (m) { pick("query_svc"); pick("query_raw") }
    goal(m ? sprintf("raw range read through svc at least 30%% of a raw SQLite scan: %.0f%%", 100 * rate["query_svc"] / rate["query_raw"]) : "raw range read through svc at least 30% of a raw SQLite scan", m, m && rate["query_svc"] >= 0.3 * rate["query_raw"])
    m = c["ingest_svc"] && c["ingest_raw"]
    if (m) { pick("ingest_svc"); pick("ingest_raw") }
    goal(m ? sprintf("ingest at least 50%% of raw rusqlite: %.0f%%", 100 * rate["ingest_svc"] / rate["ingest_raw"]) : "ingest at least 50% of raw rusqlite", m, m && rate["ingest_svc"] >= 0.5 * rate["ingest_raw"])
    m = "chart_svc" in p99
    goal(m ? sprintf("a year chart through svc in at most 50 ms at p99: %.1f ms (VictoriaMetrics %.1f ms)", p99["chart_svc"], p99["chart_vm"]) : "a year chart through svc in at most 50 ms at p99", m, m && p99["chart_svc"] <= 50)
    exit missed ? 3 : 0
}
