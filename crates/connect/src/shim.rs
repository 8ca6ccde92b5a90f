//! The pure-Python shim (`python/oloproof/`), embedded in the binary and written to a
//! content-addressed folder at run time so `object: app:SupportRag` needs no `pip install`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The shim's files: `(relative path, contents)`.
pub const PYTHON_SHIM_FILES: &[(&str, &str)] = &[
    (
        "oloproof/__init__.py",
        include_str!("../../../python/oloproof/__init__.py"),
    ),
    (
        "oloproof/worker.py",
        include_str!("../../../python/oloproof/worker.py"),
    ),
];

/// Writes the shim under `root/python-shim/<hash>/` unless already there, and returns the
/// folder to put on `PYTHONPATH`.
pub fn install_python_shim(root: &Path) -> std::io::Result<PathBuf> {
    let mut hasher = Sha256::new();
    for (name, body) in PYTHON_SHIM_FILES {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(body.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    let short: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let dir = root.join("python-shim").join(short);
    if dir.join(".complete").exists() {
        return Ok(dir);
    }
    let staging = root
        .join("python-shim")
        .join(format!(".staging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    for (name, body) in PYTHON_SHIM_FILES {
        let path = staging.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, body)?;
    }
    std::fs::write(staging.join(".complete"), b"")?;
    match std::fs::rename(&staging, &dir) {
        Ok(()) => Ok(dir),
        Err(_) if dir.join(".complete").exists() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(dir)
        }
        Err(e) => Err(e),
    }
}
