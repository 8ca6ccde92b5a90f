//! One worker process and the protocol spoken with it.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::reply;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use oloproof_core::context::ContextPassage;
use oloproof_core::passage::{Passage, Retrieval};
use oloproof_core::system::{SystemConnection, SystemInfo};
use oloproof_core::trace::{ErrorKind, StageError};
use serde_json::{json, Map, Value};

/// Protocol version this host speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Lines of stderr kept per worker.
const STDERR_KEEP: usize = 400;
/// Lines of stderr attached to an error.
const STDERR_TAIL: usize = 20;

/// The program to start (no shell).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerCommand {
    /// Program.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
}

/// How to start and talk to a worker.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The program.
    pub command: WorkerCommand,
    /// Longest a single request may take before the worker is killed and restarted.
    pub timeout: Duration,
    /// Parameters sent in `hello` (the config's overrides).
    pub params: Map<String, Value>,
}

enum Incoming {
    Line(String),
    Eof,
}

struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: Receiver<Incoming>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_unread: Arc<Mutex<Vec<String>>>,
    stash: HashMap<u64, Value>,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A connection to one worker process, restarted as needed.
pub struct WorkerConnection {
    options: WorkerOptions,
    process: Option<Process>,
    info: SystemInfo,
    next_id: u64,
    /// Stderr lines of processes that died, not yet taken.
    orphan_stderr: Vec<String>,
}

fn stage_error(stage: &str, kind: ErrorKind, message: impl Into<String>) -> StageError {
    StageError {
        stage: stage.to_string(),
        kind,
        error_type: None,
        message: message.into(),
        traceback: None,
        stderr_tail: Vec::new(),
    }
}

impl WorkerConnection {
    /// Starts a worker and performs the `hello` handshake.
    pub fn connect(options: WorkerOptions) -> Result<Self, StageError> {
        let mut conn = WorkerConnection {
            options,
            process: None,
            info: SystemInfo {
                protocol: PROTOCOL_VERSION,
                name: String::new(),
                version: String::new(),
                defaults: Map::new(),
                ops: Vec::new(),
            },
            next_id: 1,
            orphan_stderr: Vec::new(),
        };
        conn.info = conn.start()?;
        Ok(conn)
    }

    fn spawn(&self) -> Result<Process, StageError> {
        let cmd = &self.options.command;
        let mut command = Command::new(&cmd.program);
        command
            .args(&cmd.args)
            .current_dir(&cmd.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &cmd.env {
            command.env(k, v);
        }
        let mut child = command.spawn().map_err(|e| {
            stage_error(
                "hello",
                ErrorKind::Spawn,
                format!(
                    "cannot start `{}` in {}: {e}",
                    cmd.program,
                    cmd.cwd.display()
                ),
            )
        })?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| stage_error("hello", ErrorKind::Spawn, "no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| stage_error("hello", ErrorKind::Spawn, "no stdout"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| stage_error("hello", ErrorKind::Spawn, "no stderr"))?;
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Incoming::Eof);
                        return;
                    }
                    Ok(_) => {
                        if tx
                            .send(Incoming::Line(line.trim_end().to_string()))
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let unread = Arc::new(Mutex::new(Vec::new()));
        {
            let tail = Arc::clone(&tail);
            let unread = Arc::clone(&unread);
            std::thread::spawn(move || {
                let reader = BufReader::new(stderr);
                for line in reader.lines() {
                    let Ok(line) = line else { return };
                    if let Ok(mut t) = tail.lock() {
                        if t.len() == STDERR_KEEP {
                            t.pop_front();
                        }
                        t.push_back(line.clone());
                    }
                    if let Ok(mut u) = unread.lock() {
                        if u.len() < STDERR_KEEP {
                            u.push(line);
                        }
                    }
                }
            });
        }
        Ok(Process {
            child,
            stdin,
            stdout: rx,
            stderr: tail,
            stderr_unread: unread,
            stash: HashMap::new(),
        })
    }

    fn start(&mut self) -> Result<SystemInfo, StageError> {
        self.process = Some(self.spawn()?);
        let reply = self.request(
            "hello",
            json!({"protocol": PROTOCOL_VERSION, "params": self.options.params}),
        )?;
        let info: SystemInfo = serde_json::from_value(reply.clone()).map_err(|e| {
            self.protocol_error(
                "hello",
                format!(
                    "bad hello reply ({e}): {}",
                    truncate(&reply.to_string(), 300)
                ),
            )
        })?;
        if info.protocol != PROTOCOL_VERSION {
            return Err(self.protocol_error(
                "hello",
                format!(
                    "worker speaks protocol {}, this oloproof speaks {PROTOCOL_VERSION}",
                    info.protocol
                ),
            ));
        }
        Ok(info)
    }

    fn protocol_error(&mut self, stage: &str, message: String) -> StageError {
        let mut err = stage_error(stage, ErrorKind::Protocol, message);
        err.stderr_tail = self.stderr_tail();
        self.kill();
        err
    }

    fn stderr_tail(&self) -> Vec<String> {
        let Some(p) = &self.process else {
            return Vec::new();
        };
        // Give the stderr reader a moment to drain what a dying process wrote.
        std::thread::sleep(Duration::from_millis(20));
        p.stderr
            .lock()
            .map(|t| t.iter().rev().take(STDERR_TAIL).rev().cloned().collect())
            .unwrap_or_default()
    }

    fn kill(&mut self) {
        if let Some(p) = self.process.take() {
            if let Ok(mut u) = p.stderr_unread.lock() {
                self.orphan_stderr.append(&mut u);
            }
        }
    }

    /// Sends one request and waits for its response (other responses are stashed).
    fn request(&mut self, op: &str, payload: Value) -> Result<Value, StageError> {
        if self.process.is_none() {
            // Restart after a crash or timeout; the fresh process says hello again.
            self.info = self.start().map_err(|mut e| {
                e.stage = op.to_string();
                e
            })?;
        }
        let id = self.next_id;
        self.next_id += 1;
        let mut message = match payload {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        message.insert("id".into(), json!(id));
        message.insert("op".into(), json!(op));
        let line = Value::Object(message).to_string();
        let deadline = Instant::now() + self.options.timeout;
        let write_result = {
            let p = self.process.as_mut().expect("process started above");
            p.stdin
                .write_all(line.as_bytes())
                .and_then(|_| p.stdin.write_all(b"\n"))
                .and_then(|_| p.stdin.flush())
        };
        if write_result.is_err() {
            return Err(self.crashed(op));
        }
        loop {
            let p = self.process.as_mut().expect("process is live");
            if let Some(v) = p.stash.remove(&id) {
                return self.unwrap_response(op, v);
            }
            let wait = deadline.saturating_duration_since(Instant::now());
            match p.stdout.recv_timeout(wait) {
                Ok(Incoming::Line(text)) => {
                    if text.trim().is_empty() {
                        continue;
                    }
                    let value: Value = match serde_json::from_str(&text) {
                        Ok(v) => v,
                        Err(e) => {
                            return Err(self.protocol_error(
                                op,
                                format!(
                                    "worker wrote a line that is not JSON ({e}): {}",
                                    truncate(&text, 200)
                                ),
                            ))
                        }
                    };
                    match value.get("id").and_then(Value::as_u64) {
                        Some(rid) if rid == id => return self.unwrap_response(op, value),
                        Some(rid) => {
                            p.stash.insert(rid, value);
                        }
                        None => {
                            if let Some(err) = value.get("error") {
                                let err = err.clone();
                                return Err(self.protocol_error(
                                    op,
                                    format!("worker error without id: {err}"),
                                ));
                            }
                            return Err(self.protocol_error(
                                op,
                                format!("response without an id: {}", truncate(&text, 200)),
                            ));
                        }
                    }
                }
                Ok(Incoming::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.crashed(op))
                }
                Err(RecvTimeoutError::Timeout) => {
                    let mut err = stage_error(
                        op,
                        ErrorKind::Timeout,
                        format!(
                            "no response within {:.1}s; worker restarted",
                            self.options.timeout.as_secs_f64()
                        ),
                    );
                    err.stderr_tail = self.stderr_tail();
                    self.kill();
                    return Err(err);
                }
            }
        }
    }

    fn crashed(&mut self, op: &str) -> StageError {
        let status = self.process.as_mut().and_then(|p| {
            let deadline = Instant::now() + Duration::from_millis(500);
            loop {
                match p.child.try_wait() {
                    Ok(Some(s)) => return Some(s.to_string()),
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    _ => return None,
                }
            }
        });
        let mut err = stage_error(
            op,
            ErrorKind::Crash,
            match status {
                Some(s) => format!("worker {s}; restarted"),
                None => "worker closed its stdout; restarted".to_string(),
            },
        );
        err.stderr_tail = self.stderr_tail();
        self.kill();
        err
    }

    fn unwrap_response(&mut self, op: &str, value: Value) -> Result<Value, StageError> {
        if let Some(ok) = value.get("ok") {
            return Ok(ok.clone());
        }
        if let Some(err) = value.get("error") {
            let field = |k: &str| err.get(k).and_then(Value::as_str).map(str::to_string);
            return Err(StageError {
                stage: op.to_string(),
                kind: ErrorKind::Raised,
                error_type: field("type"),
                message: field("message").unwrap_or_else(|| err.to_string()),
                traceback: field("traceback"),
                stderr_tail: Vec::new(),
            });
        }
        Err(self.protocol_error(
            op,
            format!(
                "response has neither `ok` nor `error`: {}",
                truncate(&value.to_string(), 200)
            ),
        ))
    }
}

fn truncate(s: &str, max: usize) -> String {
    reply::excerpt(s, max)
}

impl WorkerConnection {
    /// A malformed reply: a protocol error carrying the stderr tail.
    fn reply_error(&self, stage: &str, message: String) -> StageError {
        let mut err = stage_error(stage, ErrorKind::Protocol, message);
        err.stderr_tail = self.stderr_tail();
        err
    }
}

impl SystemConnection for WorkerConnection {
    fn info(&self) -> &SystemInfo {
        &self.info
    }

    fn retrieve(
        &mut self,
        input: &Map<String, Value>,
        depth: usize,
    ) -> Result<Retrieval, StageError> {
        let reply = self.request("retrieve", json!({"input": input, "depth": depth}))?;
        reply::retrieval(reply, depth).map_err(|m| self.reply_error("retrieve", m))
    }

    fn count_tokens(&mut self, passages: &[Passage]) -> Result<Vec<usize>, StageError> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let reply = self.request("count_tokens", json!({"passages": passages}))?;
        reply::token_counts(reply, passages.len()).map_err(|m| self.reply_error("count_tokens", m))
    }

    fn generate(
        &mut self,
        input: &Map<String, Value>,
        context: &[ContextPassage],
    ) -> Result<Map<String, Value>, StageError> {
        let reply = self.request("generate", json!({"input": input, "context": context}))?;
        reply::generation(reply).map_err(|m| self.reply_error("generate", m))
    }

    fn rerank(
        &mut self,
        function: &str,
        input: &Map<String, Value>,
        candidates: &[Passage],
    ) -> Result<Vec<Passage>, StageError> {
        let reply = self.request(
            "rerank",
            json!({"function": function, "input": input, "candidates": candidates}),
        )?;
        reply::reranked(reply).map_err(|m| self.reply_error("rerank", m))
    }

    fn take_stderr(&mut self) -> Vec<String> {
        let mut lines = std::mem::take(&mut self.orphan_stderr);
        if let Some(p) = &self.process {
            if let Ok(mut u) = p.stderr_unread.lock() {
                lines.append(&mut u);
            }
        }
        lines
    }
}

impl Drop for WorkerConnection {
    fn drop(&mut self) {
        if let Some(p) = self.process.as_mut() {
            let _ = p.stdin.write_all(b"{\"id\":0,\"op\":\"shutdown\"}\n");
            let _ = p.stdin.flush();
            let deadline = Instant::now() + Duration::from_millis(200);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = p.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}
