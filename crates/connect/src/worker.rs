//! One worker process and the protocol spoken with it.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
#[cfg(not(unix))]
use std::process::ChildStdin;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Gone, ReplyError};
use crate::lines::{read_lines, BoundedLine, Read, StdoutLines};
use crate::{reply, MAX_RESPONSE_BYTES};
use crossbeam_channel::RecvTimeoutError;
use oloproof_core::context::ContextPassage;
use oloproof_core::passage::{Passage, Retrieval};
use oloproof_core::system::{SystemConnection, SystemInfo, TimedRetrieval};
use oloproof_core::trace::{ErrorKind, StageError};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Protocol version this host speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Lines of stderr kept per worker (the last ones, for errors) and per case (the first ones).
const STDERR_KEEP: usize = 400;
/// Lines of stderr attached to an error.
const STDERR_TAIL: usize = 20;
/// Longest stderr line kept, in bytes; the rest of a longer line is dropped and counted.
const STDERR_LINE_MAX: usize = 4096;
/// Bytes of an oversized response line quoted in its error.
const HEAD_BYTES: usize = 80;

/// The program to start (no shell).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkerCommand {
    /// Program.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// On Unix, the arguments that start a fork server for this program instead (a Python
    /// `object:` system: `-u -m oloproof.worker --fork-server module:Class`); workers are then
    /// forked from it rather than started one by one. `None` starts every worker with `args`.
    pub fork_server_args: Option<Vec<String>>,
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
    /// A line longer than [`MAX_RESPONSE_BYTES`]: its length and its first bytes. The rest was
    /// read and dropped, never held in memory.
    Oversized {
        bytes: usize,
        head: String,
    },
    /// A line that is not UTF-8: where the first bad byte is, and the line shown lossily.
    NotUtf8 {
        offset: usize,
        byte: u8,
        shown: String,
    },
    Eof,
}

/// What the stdout reader hands over for one line.
fn incoming(line: BoundedLine) -> Incoming {
    if line.len > MAX_RESPONSE_BYTES {
        let head = &line.kept[..line.kept.len().min(HEAD_BYTES)];
        return Incoming::Oversized {
            bytes: line.len,
            head: String::from_utf8_lossy(head).into_owned(),
        };
    }
    match String::from_utf8(line.kept) {
        Ok(text) => Incoming::Line(text),
        Err(e) => {
            let offset = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            Incoming::NotUtf8 {
                offset,
                byte: bytes[offset],
                shown: String::from_utf8_lossy(&bytes).into_owned(),
            }
        }
    }
}

/// A stderr line as kept: lossily decoded, cut at [`STDERR_LINE_MAX`] bytes with the rest
/// counted.
fn stderr_text(line: BoundedLine) -> String {
    let mut text = String::from_utf8_lossy(&line.kept).into_owned();
    if line.len > line.kept.len() {
        text.push_str(&format!(
            "… ({} more bytes of this line not kept)",
            line.len - line.kept.len()
        ));
    }
    text
}

/// Stderr lines not yet attached to a case: the first [`STDERR_KEEP`], and how many more came.
#[derive(Default)]
struct Unread {
    lines: Vec<String>,
    dropped: usize,
}

impl Unread {
    fn push(&mut self, line: String) {
        if self.lines.len() < STDERR_KEEP {
            self.lines.push(line);
        } else {
            self.dropped += 1;
        }
    }

    /// The lines, with a last one saying how many were not kept.
    fn take(&mut self) -> Vec<String> {
        let mut lines = std::mem::take(&mut self.lines);
        let dropped = std::mem::take(&mut self.dropped);
        if dropped > 0 {
            lines.push(format!(
                "… {dropped} more lines of stderr not kept (oloproof keeps the first {STDERR_KEEP} per case)"
            ));
        }
        lines
    }
}

/// A worker's stdin pipe.
#[cfg(unix)]
type StdinPipe = std::fs::File;
/// A worker's stdin pipe.
#[cfg(not(unix))]
type StdinPipe = ChildStdin;

/// A worker process: spawned by this host, or forked by a fork server.
enum Handle {
    Spawned(Child),
    #[cfg(unix)]
    Forked(crate::fork_server::Forked),
}

impl Handle {
    /// The exit status if the worker has exited.
    fn try_wait(&mut self) -> Option<ExitStatus> {
        match self {
            Handle::Spawned(child) => child.try_wait().ok().flatten(),
            #[cfg(unix)]
            Handle::Forked(forked) => forked.try_wait(),
        }
    }

    fn kill(&mut self) {
        match self {
            Handle::Spawned(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            // Its parent, the fork server, reaps it.
            #[cfg(unix)]
            Handle::Forked(forked) => forked.kill(),
        }
    }
}

struct Process {
    child: Handle,
    stdin: StdinPipe,
    stdout: StdoutLines,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_unread: Arc<Mutex<Unread>>,
    /// A second handle on the stderr pipe, to see whether the reader thread has caught up.
    stderr_watch: Option<std::fs::File>,
}

impl Drop for Process {
    fn drop(&mut self) {
        self.child.kill();
    }
}

/// A connection to one worker process, restarted as needed.
pub struct WorkerConnection {
    options: WorkerOptions,
    process: Option<Process>,
    info: SystemInfo,
    next_id: u64,
    /// Stderr lines of processes that died, not yet taken.
    orphan_stderr: Unread,
    /// A restart that `ready` attempted and that failed, reported by the next request.
    failed_start: Option<StageError>,
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
                lanes: Vec::new(),
            },
            next_id: 1,
            orphan_stderr: Unread::default(),
            failed_start: None,
        };
        conn.info = conn.start()?;
        Ok(conn)
    }

    fn spawn(&self) -> Result<Process, StageError> {
        let cmd = &self.options.command;
        #[cfg(unix)]
        if let Some(forked) = crate::fork_server::fork_worker(cmd) {
            let watch = watch_of(&forked.stderr);
            return Ok(Self::process(
                Handle::Forked(forked.process),
                forked.stdin,
                forked.stdout,
                forked.stderr,
                watch,
            ));
        }
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
        #[cfg(unix)]
        let (stdin, stdout) = (
            std::fs::File::from(std::os::fd::OwnedFd::from(stdin)),
            std::fs::File::from(std::os::fd::OwnedFd::from(stdout)),
        );
        #[cfg(unix)]
        let watch = watch_of(&stderr);
        #[cfg(not(unix))]
        let watch = None;
        Ok(Self::process(
            Handle::Spawned(child),
            stdin,
            stdout,
            stderr,
            watch,
        ))
    }

    /// A started worker: its stdout read line by line, its stderr drained by a thread.
    fn process(
        child: Handle,
        stdin: StdinPipe,
        stdout: crate::lines::StdoutPipe,
        stderr: impl std::io::Read + Send + 'static,
        stderr_watch: Option<std::fs::File>,
    ) -> Process {
        let stdout = StdoutLines::new(stdout, MAX_RESPONSE_BYTES);
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let unread = Arc::new(Mutex::new(Unread::default()));
        {
            let tail = Arc::clone(&tail);
            let unread = Arc::clone(&unread);
            // Always drained, whatever comes (invalid UTF-8, endless lines): a worker blocked on
            // a full stderr pipe would look hung.
            std::thread::spawn(move || {
                read_lines(stderr, STDERR_LINE_MAX, |line| {
                    let line = stderr_text(line);
                    if let Ok(mut t) = tail.lock() {
                        if t.len() == STDERR_KEEP {
                            t.pop_front();
                        }
                        t.push_back(line.clone());
                    }
                    if let Ok(mut u) = unread.lock() {
                        u.push(line);
                    }
                    true
                });
            });
        }
        Process {
            child,
            stdin,
            stdout,
            stderr: tail,
            stderr_unread: unread,
            stderr_watch,
        }
    }

    fn start(&mut self) -> Result<SystemInfo, StageError> {
        self.process = Some(self.spawn()?);
        let reply = self.request(
            "hello",
            &json!({"protocol": PROTOCOL_VERSION, "params": self.options.params}),
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
            // A poisoned lock means the stderr reader panicked: there is no tail to show, and
            // the error this tail decorates is reported all the same.
            .unwrap_or_default()
    }

    fn kill(&mut self) {
        if let Some(p) = self.process.take() {
            if let Ok(mut u) = p.stderr_unread.lock() {
                for line in u.take() {
                    self.orphan_stderr.push(line);
                }
            }
        }
    }

    /// Writes one request line (its newline included, so it is one `write`); `Err` when the
    /// worker is already gone (it exited, or closed its stdin), so it cannot have received the
    /// request.
    fn send(&mut self, line: &str) -> Result<(), Gone> {
        let p = self
            .process
            .as_mut()
            .expect("process started before sending");
        if let Some(status) = p.child.try_wait() {
            return Err(Gone::Exited(status.to_string()));
        }
        p.stdin
            .write_all(line.as_bytes())
            .and_then(|_| p.stdin.flush())
            .map_err(|e| match self.exit_status() {
                Some(status) => Gone::Exited(status),
                None => Gone::StdinClosed(e),
            })
    }

    /// Sends one request and waits for its response.
    ///
    /// A worker found dead when the request is written (it exited after its last response,
    /// between two requests) never saw the request: it is restarted and the request sent to the
    /// new process, once. A reply for any other request id is a protocol error: this host has
    /// one request in flight per worker.
    fn request(&mut self, op: &str, body: &impl Serialize) -> Result<Value, StageError> {
        let (id, text) = self.exchange(op, body)?;
        self.response_value(op, id, &text)
    }

    /// [`Self::request`], answering the `ok` value as its JSON text (for a reply that is
    /// deserialised straight into typed values). A response that is not a plain
    /// `{"id": <this request>, "ok": …}` is read as `request` reads it, for the same error.
    fn request_text(
        &mut self,
        op: &str,
        body: &impl Serialize,
    ) -> Result<Box<serde_json::value::RawValue>, StageError> {
        #[derive(serde::Deserialize)]
        struct Answer<'a> {
            id: Option<u64>,
            #[serde(borrow)]
            ok: Option<&'a serde_json::value::RawValue>,
        }
        let (id, text) = self.exchange(op, body)?;
        if let Ok(Answer {
            id: Some(rid),
            ok: Some(ok),
        }) = serde_json::from_str::<Answer<'_>>(&text)
        {
            if rid == id {
                return Ok(ok.to_owned());
            }
        }
        let value = self.response_value(op, id, &text)?;
        serde_json::value::to_raw_value(&value)
            .map_err(|e| self.protocol_error(op, format!("worker reply not re-encoded: {e}")))
    }

    /// Sends one request and reads the next non-empty line the worker writes: the request's
    /// id and that line.
    fn exchange(&mut self, op: &str, body: &impl Serialize) -> Result<(u64, String), StageError> {
        if self.process.is_none() {
            // Restart after a crash or timeout (unless `ready` tried already); the fresh
            // process says hello again.
            let started = match self.failed_start.take() {
                Some(e) => Err(e),
                None => self.start(),
            };
            self.info = started.map_err(|mut e| {
                e.stage = op.to_string();
                e
            })?;
        }
        let id = self.next_id;
        self.next_id += 1;
        let line = reply::request_line(op, id, body).map_err(|e| {
            stage_error(op, ErrorKind::Protocol, format!("request not written: {e}"))
        })?;
        if let Err(gone) = self.send(&line) {
            if op == "hello" {
                return Err(self.crashed(op));
            }
            tracing::warn!(
                op,
                "the worker exited between two requests ({gone}); restarting it for `{op}`"
            );
            self.kill();
            self.info = self.start().map_err(|mut e| {
                e.stage = op.to_string();
                e
            })?;
            if let Err(again) = self.send(&line) {
                let mut err = stage_error(
                    op,
                    ErrorKind::Crash,
                    format!(
                        "worker exited between two requests ({gone}), and again right after the \
                         `hello` of its restart ({again}), before it received `{op}`; a worker \
                         must keep reading requests until `shutdown`"
                    ),
                );
                err.stderr_tail = self.stderr_tail();
                self.kill();
                return Err(err);
            }
        }
        let deadline = Instant::now() + self.options.timeout;
        loop {
            let p = self.process.as_mut().expect("process is live");
            let got = p.stdout.next_until(deadline).map(|read| match read {
                Read::Line(line) => incoming(line),
                Read::Eof => Incoming::Eof,
            });
            match got {
                Ok(Incoming::Line(text)) => {
                    if text.trim().is_empty() {
                        continue;
                    }
                    return Ok((id, text));
                }
                Ok(Incoming::Oversized { bytes, head }) => {
                    return Err(self.protocol_error(
                        op,
                        format!(
                            "worker wrote a line of {bytes} bytes, more than the {MAX_RESPONSE_BYTES} \
                             bytes a response may have (it was read and dropped); return less from \
                             `{op}` (fewer or shorter passages, a shorter answer). It began: {}",
                            truncate(&head, HEAD_BYTES)
                        ),
                    ))
                }
                Ok(Incoming::NotUtf8 {
                    offset,
                    byte,
                    shown,
                }) => {
                    return Err(self.protocol_error(
                        op,
                        format!(
                            "worker wrote a line that is not UTF-8 (byte 0x{byte:02x} at offset \
                             {offset}); protocol lines are UTF-8 JSON, so write stdout as UTF-8: {}",
                            truncate(&shown, 200)
                        ),
                    ))
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

    /// The `ok` value of the response `text` to request `id`, or the error it reports or is.
    fn response_value(&mut self, op: &str, id: u64, text: &str) -> Result<Value, StageError> {
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                return Err(self.protocol_error(
                    op,
                    format!(
                        "worker wrote a line that is not JSON ({e}): {}",
                        truncate(text, 200)
                    ),
                ))
            }
        };
        match value.get("id").and_then(Value::as_u64) {
            Some(rid) if rid == id => self.unwrap_response(op, value),
            Some(rid) => Err(self.protocol_error(
                op,
                format!(
                    "worker answered request {rid}, which is not in flight (this \
                     `{op}` is request {id}); each response must carry the `id` of \
                     its request: {}",
                    truncate(&value.to_string(), 200)
                ),
            )),
            None => {
                if let Some(err) = value.get("error") {
                    let err = err.clone();
                    return Err(self.protocol_error(op, format!("worker error without id: {err}")));
                }
                Err(self.protocol_error(
                    op,
                    format!(
                        "response without an id: {}",
                        truncate(&value.to_string(), 200)
                    ),
                ))
            }
        }
    }

    /// The worker's exit status, waiting up to half a second for it to exit.
    fn exit_status(&mut self) -> Option<String> {
        let p = self.process.as_mut()?;
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            match p.child.try_wait() {
                Some(s) => return Some(s.to_string()),
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                _ => return None,
            }
        }
    }

    fn crashed(&mut self, op: &str) -> StageError {
        let status = self.exit_status();
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

    fn unwrap_response(&mut self, op: &str, mut value: Value) -> Result<Value, StageError> {
        if let Some(ok) = value.as_object_mut().and_then(|m| m.remove("ok")) {
            return Ok(ok);
        }
        if let Some(err) = value.get("error") {
            return Err(raised(op, err));
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

/// The error a worker reported for `op` (the protocol's `{type, message, traceback}`).
fn raised(op: &str, err: &Value) -> StageError {
    let field = |k: &str| err.get(k).and_then(Value::as_str).map(str::to_string);
    StageError {
        stage: op.to_string(),
        kind: ErrorKind::Raised,
        error_type: field("type"),
        message: field("message").unwrap_or_else(|| err.to_string()),
        traceback: field("traceback"),
        stderr_tail: Vec::new(),
    }
}

fn truncate(s: &str, max: usize) -> String {
    reply::excerpt(s, max)
}

impl WorkerConnection {
    /// The entries of a batch reply as retrieve calls, ending at the first failing one (as
    /// with one request per call: the first failing call ends the case).
    fn batch_results(
        &self,
        entries: Vec<reply::BatchEntry>,
    ) -> Vec<Result<TimedRetrieval, StageError>> {
        let mut out = Vec::with_capacity(entries.len());
        for entry in entries {
            let r = match entry {
                reply::BatchEntry::Retrieved(retrieval, latency_ms) => Ok(TimedRetrieval {
                    retrieval,
                    latency_ms,
                }),
                reply::BatchEntry::Raised(err) => Err(raised("retrieve", &err)),
                reply::BatchEntry::Bad(e) => Err(self.reply_error("retrieve", e)),
            };
            let failed = r.is_err();
            out.push(r);
            if failed {
                break;
            }
        }
        out
    }

    /// A malformed reply: a protocol error carrying the stderr tail.
    fn reply_error(&self, stage: &str, error: ReplyError) -> StageError {
        let mut err = stage_error(stage, ErrorKind::Protocol, error.to_string());
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
        let reply = self.request(
            "retrieve",
            &reply::RetrieveBody::new(input, depth, Default::default()),
        )?;
        reply::retrieval(&reply, depth).map_err(|e| self.reply_error("retrieve", e))
    }

    fn count_tokens(&mut self, passages: &[Passage]) -> Result<Vec<usize>, StageError> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let reply = self.request("count_tokens", &reply::PassagesBody { passages })?;
        reply::token_counts(reply, passages.len()).map_err(|e| self.reply_error("count_tokens", e))
    }

    fn generate(
        &mut self,
        input: &Map<String, Value>,
        context: &[ContextPassage],
    ) -> Result<Map<String, Value>, StageError> {
        let reply = self.request("generate", &reply::GenerateBody { input, context })?;
        reply::generation(reply).map_err(|e| self.reply_error("generate", e))
    }

    fn rerank(
        &mut self,
        function: &str,
        input: &Map<String, Value>,
        candidates: &[Passage],
    ) -> Result<Vec<Passage>, StageError> {
        let reply = self.request(
            "rerank",
            &reply::CandidatesBody {
                function: Some(function),
                input,
                candidates,
            },
        )?;
        reply::reranked(reply).map_err(|e| self.reply_error("rerank", e))
    }

    fn retrieve_with(
        &mut self,
        input: &Map<String, Value>,
        depth: usize,
        request: oloproof_core::system::RetrieveRequest<'_>,
    ) -> Result<Retrieval, StageError> {
        let reply = self.request("retrieve", &reply::RetrieveBody::new(input, depth, request))?;
        reply::retrieval(&reply, depth).map_err(|e| self.reply_error("retrieve", e))
    }

    fn retrieve_batch(
        &mut self,
        input: &Map<String, Value>,
        depth: usize,
        requests: &[oloproof_core::system::RetrieveRequest<'_>],
    ) -> Result<Vec<Result<TimedRetrieval, StageError>>, StageError> {
        // One call, or a worker that did not declare the op: plain `retrieve` requests.
        if requests.len() < 2 || !self.info.implements("retrieve_batch") {
            return Ok(oloproof_core::system::retrieve_each(
                self, input, depth, requests,
            ));
        }
        let reply = self.request(
            "retrieve_batch",
            &reply::RetrieveBatchBody::new(input, depth, requests),
        )?;
        let entries = reply::retrieve_batch(reply, requests.len(), depth)
            .map_err(|e| self.reply_error("retrieve", e))?;
        Ok(self.batch_results(entries))
    }

    fn rewrite_retrieve(
        &mut self,
        input: &Map<String, Value>,
        depth: usize,
        lanes: &[&str],
        skip_filters: bool,
    ) -> Result<oloproof_core::system::RewriteRetrieval, StageError> {
        if !self.info.implements("rewrite_retrieve") {
            return Err(oloproof_core::system::not_implemented("rewrite_retrieve"));
        }
        let reply = self.request_text(
            "rewrite_retrieve",
            &reply::RewriteRetrieveBody {
                input,
                depth,
                lanes,
                skip_filters,
            },
        )?;
        let (rewrite, entries) = reply::rewrite_retrieve_text(&reply, lanes.len().max(1), depth)
            .map_err(|e| self.reply_error("rewrite", e))?;
        let rewrite = match rewrite {
            reply::RewriteEntry::Rewritten(r, ms) => Ok((r, ms)),
            reply::RewriteEntry::Raised(err) => Err(raised("rewrite", &err)),
            reply::RewriteEntry::Bad(e) => Err(self.reply_error("rewrite", e)),
        };
        Ok(oloproof_core::system::RewriteRetrieval {
            rewrite,
            retrievals: self.batch_results(entries),
        })
    }

    fn rewrite(
        &mut self,
        input: &Map<String, Value>,
    ) -> Result<oloproof_core::pipeline::Rewrite, StageError> {
        let reply = self.request("rewrite", &reply::InputBody { input })?;
        reply::rewrite(reply).map_err(|e| self.reply_error("rewrite", e))
    }

    fn rerank_stage(
        &mut self,
        input: &Map<String, Value>,
        candidates: &[Passage],
    ) -> Result<(Vec<Passage>, Option<oloproof_core::pipeline::Usage>), StageError> {
        let reply = self.request(
            "rerank",
            &reply::CandidatesBody {
                function: None,
                input,
                candidates,
            },
        )?;
        reply::rerank_stage(reply, candidates).map_err(|e| self.reply_error("rerank", e))
    }

    fn fuse(
        &mut self,
        input: &Map<String, Value>,
        lists: &[oloproof_core::pipeline::LaneRetrieval],
    ) -> Result<Vec<Passage>, StageError> {
        let reply = self.request("fuse", &reply::fuse_request(input, lists))?;
        reply::fused(reply).map_err(|e| self.reply_error("fuse", e))
    }

    fn ready(&mut self) {
        if self.process.is_none() && self.failed_start.is_none() {
            match self.start() {
                Ok(info) => self.info = info,
                // Reported by the next request, with its op as the stage.
                Err(e) => self.failed_start = Some(e),
            }
        }
    }

    fn take_stderr(&mut self) -> Vec<String> {
        let mut lines = self.orphan_stderr.take();
        if let Some(p) = &self.process {
            if let Some(watch) = &p.stderr_watch {
                wait_for_stderr_reader(watch);
            }
            if let Ok(mut u) = p.stderr_unread.lock() {
                lines.append(&mut u.take());
            }
        }
        lines
    }
}

/// A duplicate of a worker's stderr pipe, polled by [`wait_for_stderr_reader`].
#[cfg(unix)]
fn watch_of(stderr: &impl std::os::fd::AsFd) -> Option<std::fs::File> {
    stderr
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .map(std::fs::File::from)
}

/// Waits (at most 50 ms) until the stderr reader thread has taken what the worker wrote: a
/// worker writes its stderr before its reply, so once the reply is read the lines are in the
/// pipe, and a busy machine may not have run the reader yet. Without it, a case's stderr could
/// land on the next case.
fn wait_for_stderr_reader(watch: &std::fs::File) {
    #[cfg(unix)]
    {
        let deadline = Instant::now() + Duration::from_millis(50);
        loop {
            let mut fds = [rustix::event::PollFd::new(
                watch,
                rustix::event::PollFlags::IN,
            )];
            let zero = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let pending = matches!(rustix::event::poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
                && fds[0].revents().contains(rustix::event::PollFlags::IN);
            if !pending || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    #[cfg(not(unix))]
    let _ = watch;
}

impl Drop for WorkerConnection {
    fn drop(&mut self) {
        if let Some(p) = self.process.as_mut() {
            let _ = p.stdin.write_all(b"{\"id\":0,\"op\":\"shutdown\"}\n");
            let _ = p.stdin.flush();
            let deadline = Instant::now() + Duration::from_millis(200);
            while Instant::now() < deadline {
                if p.child.try_wait().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<(Vec<u8>, usize)> {
        let mut out = Vec::new();
        read_lines(input, max, |l| {
            out.push((l.kept, l.len));
            true
        });
        out
    }

    #[test]
    fn lines_are_bounded_and_counted() {
        assert_eq!(
            lines(b"ab\r\n\ncdef\nlast", 3),
            vec![
                (b"ab".to_vec(), 2),
                (Vec::new(), 0),
                (b"cde".to_vec(), 4),
                (b"las".to_vec(), 4)
            ]
        );
        // A line longer than the reader's buffer is still cut at `max` and counted whole.
        let long = [vec![b'x'; 200_000], b"\nnext\n".to_vec()].concat();
        let got = lines(&long, 10);
        assert_eq!(got[0], (vec![b'x'; 10], 200_000));
        assert_eq!(got[1], (b"next".to_vec(), 4));
    }

    #[test]
    fn oversized_and_non_utf8_lines_are_told_apart() {
        let line = |kept: &[u8], len| BoundedLine {
            kept: kept.to_vec(),
            len,
        };
        assert!(matches!(incoming(line(b"{}", 2)), Incoming::Line(t) if t == "{}"));
        assert!(matches!(
            incoming(line(b"{\"id\":1", MAX_RESPONSE_BYTES + 1)),
            Incoming::Oversized { bytes, head } if bytes == MAX_RESPONSE_BYTES + 1 && head == "{\"id\":1"
        ));
        assert!(matches!(
            incoming(line(b"ab\xffc", 4)),
            Incoming::NotUtf8 { offset: 2, byte: 0xff, shown } if shown == "ab\u{fffd}c"
        ));
        assert_eq!(
            stderr_text(line(b"ab\xff", 10)),
            "ab\u{fffd}… (7 more bytes of this line not kept)"
        );
    }

    #[test]
    fn unread_stderr_keeps_the_first_lines_and_counts_the_rest() {
        let mut u = Unread::default();
        for i in 0..STDERR_KEEP + 5 {
            u.push(format!("line {i}"));
        }
        let lines = u.take();
        assert_eq!(lines.len(), STDERR_KEEP + 1);
        assert_eq!(lines[0], "line 0");
        assert_eq!(
            lines[STDERR_KEEP],
            "… 5 more lines of stderr not kept (oloproof keeps the first 400 per case)"
        );
        assert!(u.take().is_empty());
    }
}
