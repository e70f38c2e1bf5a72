//! Times the stages of compiling one environment document:
//! `cargo run --release -p flagpole-engine --example compile_timing -- FILE`.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: compile_timing FILE");
    let bytes = std::fs::read(&path).expect("readable file");
    for _ in 0..3 {
        let t = Instant::now();
        let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let parse = t.elapsed();
        let t = Instant::now();
        let ctx = flagpole_engine::document::document_to_context(&doc).unwrap();
        let map = t.elapsed();
        let t = Instant::now();
        let (env, _) = flagpole_engine::Environment::from_context(&ctx).unwrap();
        let compile = t.elapsed();
        let t = Instant::now();
        drop((doc, ctx));
        let free = t.elapsed();
        drop(env);
        println!("parse {parse:?} map {map:?} compile {compile:?} free {free:?}");
    }
}
