-- POST /api/v1/identities/ with varied identifiers: each wrk thread cycles through a pool of
-- prepared requests for identifiers nobody else uses, all with the benchmark traits (plan,
-- age, app_version: the three segment-matching traits of the seeded documents).
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

local pool = {}
local n = 0
local POOL = 1000

function init(args)
  local headers = {}
  for k, v in pairs(wrk.headers) do headers[k] = v end
  headers["Content-Type"] = "application/json"
  for i = 1, POOL do
    local body = string.format(
      '{"identifier":"load-%d-%06d","traits":[' ..
      '{"trait_key":"plan","trait_value":"enterprise"},' ..
      '{"trait_key":"age","trait_value":42},' ..
      '{"trait_key":"app_version","trait_value":"2.4.1"}]}', tid or 0, i)
    pool[i] = wrk.format("POST", wrk.path, headers, body)
  end
end

function request()
  n = n % POOL + 1
  return pool[n]
end
