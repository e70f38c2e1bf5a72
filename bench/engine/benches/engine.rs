fn main() {
    let doc = std::fs::read("examples/environment.json")
        .or_else(|_| std::fs::read("../../examples/environment.json"))
        .unwrap();
    let env: Result<flagsmith_flag_engine::environments::Environment, _> =
        serde_json::from_slice(&doc);
    match env {
        Ok(e) => println!("ok {}", e.feature_states.len()),
        Err(e) => println!("err {e}"),
    }
}
