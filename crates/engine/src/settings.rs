//! How a run reaches its system: worker count, timeout, and the connector spec (HTTP endpoint
//! or worker command) built from the resolved settings.
//!
//! The resolved settings themselves ([`RunSettings`], [`SystemSettings`]) are data stored with
//! the run and live in `oloproof_core::settings`; they are re-exported here because the
//! engine's run API takes and returns them.

use std::path::Path;
use std::time::Duration;

use oloproof_core::config::{ProjectOptions, RagOptions};
use serde_json::{json, Map};

use oloproof_connect::{ConnectorSpec, HttpOptions, WorkerCommand, WorkerOptions};
pub use oloproof_core::settings::{RunSettings, SystemSettings};

/// Default per-request timeout.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
/// Environment variable naming the Python interpreter for `object:` systems.
pub const ENV_PYTHON: &str = "OLOPROOF_PYTHON";

/// Number of worker processes: the config's, else the number of cores.
pub fn worker_count(rag: &RagOptions) -> usize {
    rag.workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    })
}

/// Per-request timeout.
pub fn timeout(rag: &RagOptions) -> f64 {
    rag.timeout_s
        .filter(|t| *t > 0.0)
        .unwrap_or(DEFAULT_TIMEOUT_S)
}

/// How to reach the system: an HTTP endpoint, or the command that starts one worker; with the
/// hello params.
pub fn connector_spec(
    options: &ProjectOptions,
    config_dir: &Path,
    shim_dir: &Path,
) -> ConnectorSpec {
    let worker = worker_options(options, config_dir, shim_dir);
    match &options.rag().http {
        Some(url) => ConnectorSpec::Http(HttpOptions {
            url: url.clone(),
            timeout: worker.timeout,
            params: worker.params,
        }),
        None => ConnectorSpec::Worker(worker),
    }
}

/// Set (non-empty), Python workers are started one by one instead of forked from one fork
/// server per system (for a `sitecustomize` or `.pth` hook that must run in each worker).
pub const ENV_NO_FORK_SERVER: &str = "OLOPROOF_NO_FORK_SERVER";

/// The interpreter a Python name resolves to (`sys.executable`), asked once per process and
/// name where workers are not forked from a fork server. Version managers such as pyenv put a
/// shell script in front of `python3`; starting every worker through it costs tens of
/// milliseconds of CPU each. If the question fails, the name is used as given (and a failure
/// to start is reported when the worker starts).
fn resolve_python(name: &str, cwd: &Path) -> String {
    static RESOLVED: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, String>>,
    > = std::sync::OnceLock::new();
    let cache = RESOLVED.get_or_init(Default::default);
    // A poisoned lock only loses the memo: the interpreter is looked up again.
    if let Some(found) = cache.lock().ok().and_then(|c| c.get(name).cloned()) {
        return found;
    }
    // An interpreter that cannot say where it is keeps its name: the worker then starts it by
    // name, and a missing interpreter is reported when it fails to start.
    let resolved = std::process::Command::new(name)
        .args(["-c", "import sys; print(sys.executable)"])
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && Path::new(s).is_absolute())
        .unwrap_or_else(|| name.to_string());
    if let Ok(mut c) = cache.lock() {
        c.insert(name.to_string(), resolved.clone());
    }
    resolved
}

/// Interpreter names looked for beside the binary, in order.
#[cfg(not(windows))]
const PYTHON_NAMES: &[&str] = &["python3", "python"];
#[cfg(windows)]
const PYTHON_NAMES: &[&str] = &["python.exe"];

/// The interpreter of the virtual environment this binary was installed into.
///
/// `pip install oloproof` puts the `oloproof` executable in the environment's `bin/` (`Scripts\`
/// on Windows) beside its `python`, so workers started by that binary run the environment's
/// interpreter and the user's system imports the packages installed there. A binary built from
/// a clone (`target/…/oloproof`) or installed by cargo has no interpreter beside it: `None`.
fn python_beside_this_binary() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    python_in(exe.parent()?).map(|p| p.display().to_string())
}

/// The first of [`PYTHON_NAMES`] that is a file in `dir`, as a path in `dir` (a venv's
/// `python3` is a symbolic link that must not be resolved: the link's location makes the venv).
fn python_in(dir: &Path) -> Option<std::path::PathBuf> {
    PYTHON_NAMES
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
}

/// The command that starts one worker, and its hello params.
///
/// The interpreter of an `object:` system is, in order: `python:` of the config,
/// `$OLOPROOF_PYTHON`, the `python3` beside this binary (the virtual environment `pip install
/// oloproof` installed it into), then `python3` from `PATH`.
pub fn worker_options(
    options: &ProjectOptions,
    config_dir: &Path,
    shim_dir: &Path,
) -> WorkerOptions {
    let rag = options.rag();
    let config_dir_abs =
        std::fs::canonicalize(config_dir).unwrap_or_else(|_| config_dir.to_path_buf());
    let mut params = Map::new();
    if let Some(v) = rag.depth {
        params.insert("depth".into(), json!(v));
    }
    if let Some(v) = rag.top_k {
        params.insert("top_k".into(), json!(v));
    }
    if let Some(v) = rag.token_budget {
        params.insert("token_budget".into(), json!(v));
    }
    if let Some(v) = &rag.index_version {
        params.insert("index_version".into(), json!(v));
    }
    if let Some(p) = &rag.params {
        for (k, v) in p {
            params.insert(k.clone(), v.clone());
        }
    }
    let command = if let Some(object) = &rag.object {
        let python = rag
            .python
            .clone()
            .or_else(|| std::env::var(ENV_PYTHON).ok())
            .or_else(python_beside_this_binary)
            .unwrap_or_else(|| "python3".to_string());
        // On Unix the name starts one fork server, which forks every worker: asking the
        // interpreter where it is would cost as much as starting that server.
        let fork = cfg!(unix) && std::env::var_os(ENV_NO_FORK_SERVER).is_none_or(|v| v.is_empty());
        let python = match fork {
            true => python,
            false => resolve_python(&python, &config_dir_abs),
        };
        let mut pythonpath = format!("{}:{}", shim_dir.display(), config_dir_abs.display());
        if let Ok(existing) = std::env::var("PYTHONPATH") {
            if !existing.is_empty() {
                pythonpath = format!("{pythonpath}:{existing}");
            }
        }
        let worker_module = |extra: &[&str]| -> Vec<String> {
            ["-u", "-m", "oloproof.worker"]
                .iter()
                .chain(extra)
                .map(|a| a.to_string())
                .chain([object.clone()])
                .collect()
        };
        WorkerCommand {
            program: python,
            args: worker_module(&[]),
            cwd: config_dir_abs.clone(),
            env: vec![
                ("PYTHONPATH".into(), pythonpath),
                ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
            ],
            fork_server_args: fork.then(|| worker_module(&["--fork-server"])),
        }
    } else {
        let argv = rag.command.clone().unwrap_or_default();
        let program = argv.first().cloned().unwrap_or_default();
        let program = if program.contains('/') && Path::new(&program).is_relative() {
            config_dir_abs.join(&program).display().to_string()
        } else {
            program
        };
        WorkerCommand {
            program,
            args: argv.iter().skip(1).cloned().collect(),
            cwd: config_dir_abs.clone(),
            env: Vec::new(),
            fork_server_args: None,
        }
    };
    WorkerOptions {
        command,
        timeout: Duration::from_secs_f64(timeout(rag)),
        params,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interpreter_beside_the_binary_is_found_and_kept_unresolved() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            python_in(dir.path()),
            None,
            "an empty folder has no interpreter"
        );
        let name = PYTHON_NAMES[0];
        let target = dir.path().join("real-python");
        std::fs::write(&target, b"").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&target, dir.path().join(name)).unwrap();
        #[cfg(not(unix))]
        std::fs::write(dir.path().join(name), b"").unwrap();
        // The link itself, not what it points to: a venv is found from its interpreter's path.
        assert_eq!(python_in(dir.path()), Some(dir.path().join(name)));
    }

    #[test]
    fn a_folder_named_python_is_not_an_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        for name in PYTHON_NAMES {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        assert_eq!(python_in(dir.path()), None);
    }
}
