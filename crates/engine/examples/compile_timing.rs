//! Times the stages of compiling one environment document, both ways the engine reads one (the
//! view of its bytes, which `from_document_json` takes when it can, and the JSON tree):
//! `cargo run --release -p flagpole-engine --example compile_timing -- FILE`.
use std::time::Instant;

use flagpole_engine::document::DocumentView;

fn main() {
    let path = std::env::args().nth(1).expect("usage: compile_timing FILE");
    let bytes = std::fs::read(&path).expect("readable file");
    for _ in 0..3 {
        let t = Instant::now();
        let view = DocumentView::parse(&bytes);
        let parse = t.elapsed();
        let t = Instant::now();
        let compiled = view.and_then(DocumentView::compile);
        let compile = t.elapsed();
        let taken = compiled.is_some();
        let t = Instant::now();
        drop(compiled);
        let free = t.elapsed();
        println!("view: parse {parse:?} map+compile {compile:?} free {free:?} (taken: {taken})");

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
        println!("tree: parse {parse:?} map {map:?} compile {compile:?} free {free:?}");
    }
}
