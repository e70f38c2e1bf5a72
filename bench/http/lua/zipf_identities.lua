-- Identities traffic where identifiers repeat, as SDK polling makes it: each request's identity
-- is drawn from a Zipf distribution over 100,000 identities (P(rank k) proportional to 1/k^s,
-- s = 1.0 by default: the most frequent identity makes about 8 % of the requests, the top 100
-- about 43 %, the top 10,000 about 81 %). An identity always sends the same traits.
--
-- Arguments, after `--` on the wrk command line: `get` (GET /api/v1/identities/?identifier=…)
-- or `post` (POST /api/v1/identities/ with traits `plan`, `age`, `app_version`), then
-- optionally s, the number of identities and the number of draws per wrk thread
-- (defaults 1.0, 100000, 131072).
--
-- All the sampling happens in init, before the run: each wrk thread draws its sequence once
-- (inverse CDF by binary search over the cumulative weights; seeded per thread, so every run
-- draws the same sequence), formats each drawn identity's request once, and request() only
-- returns the next prepared request of the cycle.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

local PLANS = { "enterprise", "free", "pro", "team", "startup" }

local sequence = {}
local draws = 0
local n = 0

-- The identifier of rank k: `user-NNNNNN`, ranks scattered over a million numbers (7919 is
-- prime to 10^6, so distinct ranks give distinct identifiers), in the naming the seeded
-- documents give most identities with overrides.
local function number_of(rank)
  return (rank * 7919) % 1000000
end

local function prepare(method, number, headers)
  local identifier = string.format("user-%06d", number)
  if method == "GET" then
    return wrk.format("GET", "/api/v1/identities/?identifier=" .. identifier, headers)
  end
  local body = string.format(
    '{"identifier":"%s","traits":[' ..
    '{"trait_key":"plan","trait_value":"%s"},' ..
    '{"trait_key":"age","trait_value":%d},' ..
    '{"trait_key":"app_version","trait_value":"2.%d.%d"}]}',
    identifier, PLANS[number % #PLANS + 1], 18 + number % 60, number % 6, number % 10)
  return wrk.format("POST", "/api/v1/identities/", headers, body)
end

function init(args)
  local method = string.upper(args[1] or "get")
  assert(method == "GET" or method == "POST", "zipf_identities.lua: -- get|post [s] [ids] [draws]")
  local s = tonumber(args[2] or "1.0")
  local ids = tonumber(args[3] or "100000")
  draws = tonumber(args[4] or "131072")

  local headers = {}
  for k, v in pairs(wrk.headers) do headers[k] = v end
  if method == "POST" then headers["Content-Type"] = "application/json" end

  local cumulative, total = {}, 0
  for k = 1, ids do
    total = total + k ^ -s
    cumulative[k] = total
  end
  math.randomseed(1000003 * (tid or 1))
  local prepared = {}
  for i = 1, draws do
    local u = math.random() * total
    local lo, hi = 1, ids
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if cumulative[mid] < u then lo = mid + 1 else hi = mid end
    end
    local request = prepared[lo]
    if request == nil then
      request = prepare(method, number_of(lo), headers)
      prepared[lo] = request
    end
    sequence[i] = request
  end
end

function request()
  n = n % draws + 1
  return sequence[n]
end
