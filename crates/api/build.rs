//! The build facts of `scaleset_build_info`: the compiler's version, and the commit the binary
//! was built from (`SCALESET_REVISION` in the build's environment, as the image build passes
//! it; `unknown` without it, so a build needs neither git nor a checkout).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SCALESET_REVISION");
    // A label value: a commit id or a tag, nothing that would need escaping.
    let revision = std::env::var("SCALESET_REVISION")
        .ok()
        .map(|r| r.trim().to_owned())
        .filter(|r| {
            !r.is_empty()
                && r.len() <= 64
                && r.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'))
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    // `rustc 1.89.0 (29483883e 2025-08-04)`: the version is the second word.
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=SCALESET_BUILD_REVISION={revision}");
    println!("cargo:rustc-env=SCALESET_BUILD_RUSTC={version}");
}
