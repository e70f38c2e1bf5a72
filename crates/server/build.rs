//! Generates the flagd evaluation services (v1 and v2) from the vendored schemas in `proto/`,
//! with a vendored `protoc`, so building needs nothing installed beyond Rust.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    let include = protoc_bin_vendored::include_path()?;
    let protos = [
        "proto/flagd/evaluation/v1/evaluation.proto",
        "proto/flagd/evaluation/v2/evaluation.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    tonic_prost_build::configure()
        .build_client(false)
        .compile_protos(&protos, &["proto", include.to_str().ok_or("include path")?])?;
    Ok(())
}
