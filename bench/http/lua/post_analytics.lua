-- POST /api/v1/analytics/flags/ as an SDK sends it: evaluation counts of five features.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"new_checkout": 12, "max_projects": 3, "dark_mode": 1, "beta_banner": 40, "pricing_v2": 7}'
