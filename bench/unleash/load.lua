-- wrk script of bench/unleash.sh. Arguments after `--`:
--
--   context PATH USERS   GET PATH?userId=…&properties[…]=… for USERS distinct users, cycled
--                        (each wrk thread starts at its own offset); a user's properties are
--                        fixed (region, plan, age, appVersion, sessionId derived from its number)
--                        so the same user always asks the same question
--   plain PATH           GET PATH, every request the same
--
-- Headers (Authorization, Accept-Encoding) come from wrk's -H. When wrk is done, prints one
-- line: BENCH_WRK {json} with requests, duration, latency percentiles (µs) and errors.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

local regions = { "eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east", "sa-east" }
local plans = { "free", "starter", "pro", "enterprise" }
local pool = {}
local n = 0

function init(args)
  local mode, path = args[1], args[2]
  assert(mode == "context" or mode == "plain", "load.lua: -- context PATH USERS | plain PATH")
  if mode == "plain" then
    pool[1] = wrk.format("GET", path)
    return
  end
  local users = tonumber(args[3] or "500")
  for u = 0, users - 1 do
    local query = string.format(
      "userId=user-%d&sessionId=s-%d&properties%%5Bregion%%5D=%s&properties%%5Bplan%%5D=%s" ..
      "&properties%%5Bage%%5D=%d&properties%%5BappVersion%%5D=2.%d.%d",
      u, (u * 7919) % 100000, regions[u % #regions + 1], plans[math.floor(u / 3) % #plans + 1],
      18 + (u * 13) % 50, u % 10, math.floor(u / 10) % 10)
    pool[#pool + 1] = wrk.format("GET", path .. "?" .. query)
  end
  n = ((tid or 1) - 1) * 97 % #pool
end

function request()
  n = n % #pool + 1
  return pool[n]
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_WRK {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"errors":%d,"status_errors":%d}\n',
    summary.requests, summary.duration, summary.bytes, latency:percentile(50),
    latency:percentile(99), latency.max, e.connect + e.read + e.write + e.timeout, e.status))
end
