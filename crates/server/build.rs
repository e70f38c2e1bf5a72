//! Generates the flagd evaluation services (v1 and v2) and flagd's sync service from the
//! vendored schemas in `proto/`,
//! with a vendored `protoc`, so building needs nothing installed beyond Rust.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    let include = protoc_bin_vendored::include_path()?;
    let protos = [
        "proto/flagd/evaluation/v1/evaluation.proto",
        "proto/flagd/evaluation/v2/evaluation.proto",
        "proto/flagd/sync/v1/sync.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let includes = ["proto", include.to_str().ok_or("include path")?];
    // `ResolveAll` answers are written straight to bytes (`flagd/all`): the service sends
    // them as they are.
    tonic_prost_build::configure()
        .build_client(false)
        .extern_path(
            ".flagd.evaluation.v1.ResolveAllResponse",
            "crate::flagd::wire::Encoded",
        )
        .extern_path(
            ".flagd.evaluation.v2.ResolveAllResponse",
            "crate::flagd::wire::Encoded",
        )
        .compile_protos(&protos, &includes)?;
    // The messages as prost writes them (maps sorted), which the tests compare those bytes with.
    let reference = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("reference");
    std::fs::create_dir_all(&reference)?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(false)
        .btree_map(".")
        .out_dir(&reference)
        .compile_protos(&protos, &includes)?;
    Ok(())
}
