use std::path::Path;

/// The built frontend that `generate_context!` embeds (see tauri.conf.json).
const FRONTEND_INDEX: &str = "ui/dist/index.html";

fn main() {
    // Production builds (the default `custom-protocol` feature) embed ui/dist;
    // fail early with a clear message instead of a proc-macro panic.
    if !tauri_build::is_dev() && !Path::new(FRONTEND_INDEX).exists() {
        panic!(
            "{FRONTEND_INDEX} is missing: build the frontend first \
             (cd ui && npm ci && npm run build)"
        );
    }

    // The capabilities and permissions live next to the app sources, not at
    // the package root (the repository root), so point tauri-build at them
    // and have cargo re-run this script when they change.
    println!("cargo:rerun-if-changed=src-tauri/capabilities");
    println!("cargo:rerun-if-changed=src-tauri/permissions");

    let attributes = tauri_build::Attributes::new()
        .capabilities_path_pattern("./src-tauri/capabilities/**/*")
        // Declaring app permissions makes the ACL deny every app command that
        // no capability grants.
        .app_manifest(
            tauri_build::AppManifest::new()
                .permissions_path_pattern("./src-tauri/permissions/**/*"),
        );

    tauri_build::try_build(attributes).expect("failed to run tauri-build");
}
