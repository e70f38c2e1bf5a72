-- Identities that never repeat: every request names an identifier no earlier request used
-- (`new-<thread>-<n>`), so neither an identity cache nor an endpoint cache can answer it: each
-- one is a whole evaluation, as the first request of every user is.
--
-- Argument, after `--` on the wrk command line: `get` (GET /api/v1/identities/?identifier=…)
-- or `post` (POST /api/v1/identities/ with the traits `plan`, `age`, `app_version`: the three
-- segment-matching traits of the seeded documents).
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

local method = "GET"
local headers = {}
local n = 0

function init(args)
  method = string.upper(args[1] or "get")
  assert(method == "GET" or method == "POST", "unique_identities.lua: -- get|post")
  for k, v in pairs(wrk.headers) do headers[k] = v end
  if method == "POST" then headers["Content-Type"] = "application/json" end
end

function request()
  n = n + 1
  local identifier = string.format("new-%d-%d", tid or 0, n)
  if method == "GET" then
    return wrk.format("GET", "/api/v1/identities/?identifier=" .. identifier, headers)
  end
  local body = '{"identifier":"' .. identifier .. '","traits":[' ..
    '{"trait_key":"plan","trait_value":"enterprise"},' ..
    '{"trait_key":"age","trait_value":42},' ..
    '{"trait_key":"app_version","trait_value":"2.4.1"}]}'
  return wrk.format("POST", "/api/v1/identities/", headers, body)
end
