-- The soak's request mix for wrk (its peak measurement): GET /api/v1/flags/, GET and POST
-- /api/v1/identities/ and POST /ofrep/v1/evaluate/flags in equal parts, over 1,000 identities,
-- with the seeded documents' segment-matching traits. Arguments: the client key, the server
-- key (`wrk … URL -- CLIENT_KEY SERVER_KEY`). Loaded with report.lua.
local pool = {}
local n = 0

function init(args)
  local ck, sk = args[1], args[2]
  local traits = '[{"trait_key":"plan","trait_value":"enterprise"},' ..
    '{"trait_key":"age","trait_value":42},{"trait_key":"app_version","trait_value":"2.4.1"}]'
  for i = 1, 1000 do
    local id = string.format("peak-%d", i)
    pool[#pool + 1] = wrk.format("GET", "/api/v1/flags/", {["X-Environment-Key"] = ck})
    pool[#pool + 1] = wrk.format("GET", "/api/v1/identities/?identifier=" .. id,
      {["X-Environment-Key"] = ck})
    pool[#pool + 1] = wrk.format("POST", "/api/v1/identities/",
      {["X-Environment-Key"] = ck, ["Content-Type"] = "application/json"},
      string.format('{"identifier":"%s","traits":%s}', id, traits))
    pool[#pool + 1] = wrk.format("POST", "/ofrep/v1/evaluate/flags",
      {["X-API-Key"] = sk, ["Content-Type"] = "application/json"},
      string.format('{"context":{"targetingKey":"%s","plan":"enterprise","age":42,' ..
        '"app_version":"2.4.1"}}', id))
  end
end

function request()
  n = n % #pool + 1
  return pool[n]
end
