-- POST /ofrep/v1/evaluate/flags with one repeated context (the benchmark identity and its three
-- segment-matching traits). The harness adds X-Environment-Key and, for the 304 runs,
-- If-None-Match with the ETag this very context was answered with. Loaded with report.lua.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"context":{"targetingKey":"bench-user","plan":"enterprise","age":42,"app_version":"2.4.1"}}'
