//! The pure-Python shim (`python/oloproof/`, every file of the package), embedded in the binary
//! and written to a content-addressed folder at run time so `object: app:SupportRag` needs no
//! `pip install`. A test checks that the list below is the package's whole content.

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
    // The rest of the package, so that a system importing `oloproof.integrations.langchain`
    // (or the API) finds it in the shim, which comes first on `PYTHONPATH`, exactly as the
    // wheel installs it.
    (
        "oloproof/api.py",
        include_str!("../../../python/oloproof/api.py"),
    ),
    (
        "oloproof/pytest_plugin.py",
        include_str!("../../../python/oloproof/pytest_plugin.py"),
    ),
    (
        "oloproof/integrations/__init__.py",
        include_str!("../../../python/oloproof/integrations/__init__.py"),
    ),
    (
        "oloproof/integrations/_common.py",
        include_str!("../../../python/oloproof/integrations/_common.py"),
    ),
    (
        "oloproof/integrations/langchain.py",
        include_str!("../../../python/oloproof/integrations/langchain.py"),
    ),
    (
        "oloproof/integrations/llama_index.py",
        include_str!("../../../python/oloproof/integrations/llama_index.py"),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.py` file of `python/oloproof/` is embedded (a new module of the package that is
    /// missing here would be importable from the wheel but not from a worker's `PYTHONPATH`).
    #[test]
    fn the_shim_is_the_whole_package() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python");
        let mut on_disk = Vec::new();
        let mut stack = vec![root.join("oloproof")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    if path.file_name().is_some_and(|n| n != "__pycache__") {
                        stack.push(path);
                    }
                } else if path.extension().is_some_and(|e| e == "py") {
                    let rel = path.strip_prefix(&root).unwrap();
                    on_disk.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = PYTHON_SHIM_FILES
            .iter()
            .map(|(name, _)| name.to_string())
            .collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
    }

    /// The package's `__version__` is the workspace's, which is the wheel's (maturin reads
    /// `Cargo.toml`): one number for the binary and the package installed beside it.
    #[test]
    fn the_package_version_is_the_workspaces() {
        let init = PYTHON_SHIM_FILES
            .iter()
            .find(|(name, _)| *name == "oloproof/__init__.py")
            .map(|(_, body)| *body)
            .unwrap();
        let line = format!("__version__ = \"{}\"", env!("CARGO_PKG_VERSION"));
        assert!(init.lines().any(|l| l == line), "expected `{line}`");
    }
}
