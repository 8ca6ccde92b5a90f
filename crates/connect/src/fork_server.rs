//! Workers forked from one pre-started Python interpreter (Unix).
//!
//! Starting a Python worker costs tens of milliseconds of CPU before the user's module is even
//! imported: the interpreter, its site packages, this SDK. A run of 8 workers per process, or
//! 4 processes of 8 on one machine, pays that 8 or 32 times over at once, on the same cores
//! the run needs. Like `multiprocessing`'s `forkserver`, one interpreter per command is started
//! with `python -m oloproof.worker --fork-server module:Class` and every worker is a fork of it
//! that imports the user's module itself (nothing of the user's code runs before a fork). See
//! `_fork_server` in `python/oloproof/worker.py` for the other side.
//!
//! The host hands each new worker its stdin, stdout and stderr as pipes (sent with SCM_RIGHTS
//! over a Unix socket), so a forked worker is read, timed and killed like a spawned one; only
//! its exit status comes from the fork server, its parent. A fork server that cannot start or
//! dies is not used again for that command: workers are then spawned directly, and a system
//! whose interpreter fails reports that failure the usual way.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, IoSlice, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};
use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use serde_json::Value;

use crate::worker::WorkerCommand;

/// Longest wait for a fork server's `ready`, or for the process id of a fork.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// Lines of a fork server's own stderr kept for the message saying why it is not used.
const STDERR_KEEP: usize = 20;

/// A worker forked by a [`ForkServer`]: its process id and the server that is its parent.
pub(crate) struct Forked {
    pid: u32,
    server: Arc<ForkServer>,
}

impl Forked {
    /// The worker's exit status once its parent reported it; `None` while it runs (or when the
    /// fork server itself is gone and cannot say).
    pub(crate) fn try_wait(&self) -> Option<ExitStatus> {
        self.server.exit_of(self.pid)
    }

    /// Kills the worker (through its parent, which knows whether it is still running).
    pub(crate) fn kill(&self) {
        self.server.kill(self.pid);
    }
}

/// A new worker's side of the host: its process and the host's ends of its three pipes.
pub(crate) struct ForkedWorker {
    pub(crate) process: Forked,
    pub(crate) stdin: std::fs::File,
    pub(crate) stdout: std::fs::File,
    pub(crate) stderr: std::io::PipeReader,
}

/// What the fork server answers to a fork.
enum Reply {
    Pid(u32),
    Failed(String),
}

/// One fork server process and the socket to it.
pub(crate) struct ForkServer {
    /// Writes to the server (forks, kills), serialised; a fork holds it until its reply.
    control: Mutex<UnixStream>,
    replies: Receiver<Reply>,
    /// Raw wait statuses the server reported, by process id.
    exits: Arc<Mutex<HashMap<u32, i32>>>,
    process: Mutex<Child>,
}

impl Drop for ForkServer {
    /// The last worker is gone: end of input tells the server to exit (after the kills sent
    /// before it); one that does not within half a second is killed.
    fn drop(&mut self) {
        if let Ok(control) = self.control.get_mut() {
            let _ = control.shutdown(std::net::Shutdown::Both);
        }
        if let Ok(p) = self.process.get_mut() {
            let deadline = std::time::Instant::now() + Duration::from_millis(500);
            while std::time::Instant::now() < deadline {
                if !matches!(p.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = p.kill();
            let _ = p.wait();
        }
    }
}

/// A command's fork server as remembered between workers.
enum Known {
    /// Running while any of its workers lives (each holds it); started again after.
    Running(Weak<ForkServer>),
    /// It failed: this command's workers are started directly.
    Failed,
}

fn servers() -> &'static Mutex<HashMap<WorkerCommand, Known>> {
    static SERVERS: OnceLock<Mutex<HashMap<WorkerCommand, Known>>> = OnceLock::new();
    SERVERS.get_or_init(Default::default)
}

/// Forks a worker of `cmd` from its fork server (started now if need be). `None` when `cmd`
/// has no fork server (`fork_server_args` unset) or its server failed: spawn the worker
/// directly. A fork server lives as long as one of its workers does, so a process that ran a
/// system once does not keep an idle interpreter.
pub(crate) fn fork_worker(cmd: &WorkerCommand) -> Option<ForkedWorker> {
    let server_args = cmd.fork_server_args.as_ref()?;
    let server = {
        // A poisoned lock only loses the memo of servers: spawn directly.
        let mut servers = servers().lock().ok()?;
        let running = match servers.get(cmd) {
            Some(Known::Failed) => return None,
            Some(Known::Running(server)) => server.upgrade(),
            None => None,
        };
        match running {
            Some(server) => server,
            None => match ForkServer::start(cmd, server_args) {
                Ok(server) => {
                    let server = Arc::new(server);
                    servers.insert(cmd.clone(), Known::Running(Arc::downgrade(&server)));
                    server
                }
                Err(why) => {
                    tracing::info!(
                        program = %cmd.program,
                        "workers are started directly: the fork server did not start ({why})"
                    );
                    servers.insert(cmd.clone(), Known::Failed);
                    return None;
                }
            },
        }
    };
    match server.fork() {
        Ok(worker) => Some(worker),
        Err(why) => {
            tracing::info!(
                program = %cmd.program,
                "workers are started directly from now on: the fork server failed ({why})"
            );
            if let Ok(mut servers) = servers().lock() {
                servers.insert(cmd.clone(), Known::Failed);
            }
            None
        }
    }
}

impl ForkServer {
    fn start(cmd: &WorkerCommand, args: &[String]) -> Result<ForkServer, String> {
        let (ours, theirs) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
        let mut command = Command::new(&cmd.program);
        command
            .args(args)
            .current_dir(&cmd.cwd)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in &cmd.env {
            command.env(k, v);
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", cmd.program))?;
        let stderr_tail = Arc::new(Mutex::new(Vec::<String>::new()));
        if let Some(stderr) = child.stderr.take() {
            let tail = Arc::clone(&stderr_tail);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Ok(mut t) = tail.lock() {
                        if t.len() == STDERR_KEEP {
                            t.remove(0);
                        }
                        t.push(line);
                    }
                }
            });
        }
        let reader = ours.try_clone().map_err(|e| format!("socket clone: {e}"))?;
        let (reply_tx, replies) = crossbeam_channel::unbounded();
        let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
        let exits = Arc::new(Mutex::new(HashMap::new()));
        {
            let exits = Arc::clone(&exits);
            std::thread::spawn(move || read_replies(reader, ready_tx, reply_tx, exits));
        }
        let server = ForkServer {
            control: Mutex::new(ours),
            replies,
            exits,
            process: Mutex::new(child),
        };
        match ready_rx.recv_timeout(REPLY_TIMEOUT) {
            Ok(()) => {}
            Err(_) => {
                let tail = stderr_tail
                    .lock()
                    .map(|t| t.join(" | "))
                    .unwrap_or_default();
                return Err(if tail.is_empty() {
                    "no ready line".to_string()
                } else {
                    format!("no ready line; its stderr: {tail}")
                });
            }
        }
        Ok(server)
    }

    fn fork(self: &Arc<Self>) -> Result<ForkedWorker, String> {
        let (stdin_r, stdin_w) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        let (stdout_r, stdout_w) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        let (stderr_r, stderr_w) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        let control = self
            .control
            .lock()
            .map_err(|_| "poisoned lock".to_string())?;
        {
            let fds = [stdin_r.as_fd(), stdout_w.as_fd(), stderr_w.as_fd()];
            let mut space =
                [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(3))];
            let mut ancillary = SendAncillaryBuffer::new(&mut space);
            if !ancillary.push(SendAncillaryMessage::ScmRights(&fds)) {
                return Err("no room for three descriptors".into());
            }
            let line = b"fork\n";
            let sent = rustix::net::sendmsg(
                &*control,
                &[IoSlice::new(line)],
                &mut ancillary,
                SendFlags::empty(),
            )
            .map_err(|e| format!("sendmsg: {e}"))?;
            if sent < line.len() {
                (&*control)
                    .write_all(&line[sent..])
                    .map_err(|e| format!("write: {e}"))?;
            }
        }
        // The worker's ends now belong to it (the server closes its copies after forking).
        drop((stdin_r, stdout_w, stderr_w));
        let pid = match self.replies.recv_timeout(REPLY_TIMEOUT) {
            Ok(Reply::Pid(pid)) => pid,
            Ok(Reply::Failed(why)) => return Err(format!("fork failed: {why}")),
            Err(RecvTimeoutError::Timeout) => return Err("no reply to a fork".into()),
            Err(RecvTimeoutError::Disconnected) => return Err("it exited".into()),
        };
        drop(control);
        Ok(ForkedWorker {
            process: Forked {
                pid,
                server: Arc::clone(self),
            },
            stdin: std::fs::File::from(OwnedFd::from(stdin_w)),
            stdout: std::fs::File::from(OwnedFd::from(stdout_r)),
            stderr: stderr_r,
        })
    }

    fn exit_of(&self, pid: u32) -> Option<ExitStatus> {
        let exits = self.exits.lock().ok()?;
        exits.get(&pid).map(|&raw| ExitStatus::from_raw(raw))
    }

    fn kill(&self, pid: u32) {
        if let Ok(mut control) = self.control.lock() {
            // A server that is gone took its workers' parent with it: nothing to kill.
            let _ = control.write_all(format!("kill {pid}\n").as_bytes());
        }
    }
}

/// Reads the fork server's lines until it closes the socket: `ready` once, a reply per fork,
/// and exit statuses whenever a worker ends. Dropping `replies` at the end tells a waiting
/// fork that the server is gone.
fn read_replies(
    socket: UnixStream,
    ready: crossbeam_channel::Sender<()>,
    replies: crossbeam_channel::Sender<Reply>,
    exits: Arc<Mutex<HashMap<u32, i32>>>,
) {
    for line in BufReader::new(socket).lines().map_while(Result::ok) {
        let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&line) else {
            tracing::debug!("fork server: unreadable line {line:?}");
            continue;
        };
        let number = |key: &str| m.get(key).and_then(Value::as_i64);
        if m.contains_key("ready") {
            let _ = ready.try_send(());
        } else if let (Some(pid), Some(status)) = (number("exit"), number("status")) {
            if let (Ok(mut exits), Ok(pid), Ok(status)) =
                (exits.lock(), u32::try_from(pid), i32::try_from(status))
            {
                exits.insert(pid, status);
            }
        } else if let Some(pid) = number("pid").and_then(|p| u32::try_from(p).ok()) {
            let _ = replies.send(Reply::Pid(pid));
        } else if let Some(why) = m.get("fork_error").and_then(Value::as_str) {
            let _ = replies.send(Reply::Failed(why.to_string()));
        }
    }
}
