-- `/api/v1/flags/` with the key of a random environment each request: a proxy serving many
-- environments answers each from its own snapshot, found by one key lookup, and that lookup
-- must not slow down with the number of environments.
--
-- Arguments, after `--` on the wrk command line: the number of environments N; keys are
-- `many_00000` … (as bench/many.sh writes them). Requests are prepared in init (a cycle of
-- 4,096 random keys per thread, seeded per thread), so request() only returns the next one.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

local prepared = {}
local i = 0

function init(args)
  local n = tonumber(args[1] or "1")
  math.randomseed(1000 + (tid or 1))
  for k = 1, 4096 do
    local key = string.format("many_%05d", math.random(0, n - 1))
    prepared[k] = wrk.format("GET", "/api/v1/flags/", { ["X-Environment-Key"] = key })
  end
end

function request()
  i = i % #prepared + 1
  return prepared[i]
end
