-- wrk script for bench/run.sh. BENCH_MODE picks the request each connection sends:
--   hello   GET /                                          (the bare axum baseline)
--   id      GET /svc/<domain>.<table>%3Aitem<random N>     (a record by its RecordID)
--   filter  GET /svc/<table>/all?filter[line][eq][string]=line-<random M>  (indexed filter)
--   containsany  GET /svc/<table>/all?filter[tags][CONTAINSANY][object]=t<M>,nope  (unindexed)
--   fulltext     GET /svc/<table>/all?filter[note][@@][string]=pump <M>  (unindexed @@)
--   create  POST /svc/<table> with a new record each (the bench_load example's shape: id
--           item<N>, sku SKU-<N>, line, value, tags, note), N unique across threads
-- Every mode builds its request with wrk.format in request() and sends the same headers, so the
-- client-side work per request is the same for all three. done() prints one machine-readable
-- line: RESULT <mode> <requests/s> <p50 µs> <p90 µs> <p99 µs> <max µs> <requests> <errors>.
-- Environment: BENCH_MODE, BENCH_TOKEN, BENCH_DOMAIN, BENCH_TABLE, BENCH_RECORDS, BENCH_LINES.

local mode = os.getenv("BENCH_MODE") or "hello"
local token = os.getenv("BENCH_TOKEN") or ""
local domain = os.getenv("BENCH_DOMAIN") or "bench"
local tbl = os.getenv("BENCH_TABLE") or "items"
local records = tonumber(os.getenv("BENCH_RECORDS") or "100000")
local lines = tonumber(os.getenv("BENCH_LINES") or "1000")

wrk.headers["Authorization"] = "Bearer " .. token
wrk.headers["Domain"] = "domains:" .. domain

local counter = 1
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

local created = 0
local id_base = tonumber(os.getenv("BENCH_ID_BASE") or "0")
function init(args)
  math.randomseed(os.time() * 1000 + (id or 0))
  if mode == "create" then
    wrk.headers["Content-Type"] = "application/json"
  end
end

-- The next record to create: N is the thread's id times 10^9 plus its count, so threads never
-- collide on the id or the unique sku.
local function new_record()
  created = created + 1
  local n = ((id or 0) + id_base) * 1000000000 + created
  local line, hall = n % 1000, n % 7
  return string.format(
    '{"id":"item%d","sku":"SKU-%d","line":"line-%d","value":%d,"tags":["t%d","g%d"],"note":"pump %d in hall h%d"}',
    n, n, line, n, line, hall, line, hall)
end

local id_prefix = "/svc/" .. domain .. "." .. tbl .. "%3Aitem"
local filter_prefix = "/svc/" .. tbl .. "/all?filter%5Bline%5D%5Beq%5D%5Bstring%5D=line-"
-- As URLSearchParams encodes them.
local any_prefix = "/svc/" .. tbl .. "/all?filter%5Btags%5D%5BCONTAINSANY%5D%5Bobject%5D=t"
local text_prefix = "/svc/" .. tbl .. "/all?filter%5Bnote%5D%5B%40%40%5D%5Bstring%5D=pump+"

function request()
  if mode == "id" then
    return wrk.format("GET", id_prefix .. math.random(0, records - 1))
  elseif mode == "filter" then
    return wrk.format("GET", filter_prefix .. math.random(0, lines - 1))
  elseif mode == "containsany" then
    return wrk.format("GET", any_prefix .. math.random(0, lines - 1) .. "%2Cnope")
  elseif mode == "create" then
    return wrk.format("POST", "/svc/" .. tbl, nil, new_record())
  elseif mode == "fulltext" then
    return wrk.format("GET", text_prefix .. math.random(0, lines - 1))
  else
    return wrk.format("GET", "/")
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.status + e.timeout
  local rps = summary.requests / (summary.duration / 1e6)
  io.write(string.format("RESULT %s %.1f %d %d %d %d %d %d\n", mode, rps,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    summary.requests, errors))
end
