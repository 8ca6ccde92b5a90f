//! A worker's stdout, read one protocol line at a time with a deadline.
//!
//! On Unix the connection's own thread waits for the pipe with `poll(2)` and reads it: a
//! response wakes exactly the thread that asked, with no reader thread and channel between
//! them (one context switch fewer per request, which is most of the harness's cost per call
//! against a fast system). Elsewhere a reader thread hands lines over a channel.
//!
//! Either way a line of any length costs at most `max` bytes of memory: the rest of a longer
//! line is read and dropped, and only its length kept ([`BoundedLine`]).

#[cfg(not(unix))]
use std::process::ChildStdout;
use std::time::Instant;

use crossbeam_channel::RecvTimeoutError;

/// Past this many bytes, a line's buffer is grown to its limit at once.
const GROW_ALL_AT: usize = 1 << 20;

/// One line read from a pipe: at most `max` of its bytes, and its full length.
pub(crate) struct BoundedLine {
    /// The line's first bytes (without its `\n`, nor a `\r` before it).
    pub(crate) kept: Vec<u8>,
    /// The line's full length in bytes.
    pub(crate) len: usize,
}

/// Splits bytes into [`BoundedLine`]s: fed chunks as they are read, it yields each line once
/// its `\n` arrives.
#[derive(Default)]
pub(crate) struct LineSplitter {
    kept: Vec<u8>,
    len: usize,
}

impl LineSplitter {
    /// Takes bytes from the start of `buf` up to and including the first `\n`, or all of them:
    /// returns how many were taken and the line if one ended.
    pub(crate) fn feed(&mut self, buf: &[u8], max: usize) -> (usize, Option<BoundedLine>) {
        let newline = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        let room = max.saturating_sub(self.kept.len());
        let take = chunk.len().min(room);
        if self.kept.len() + take > self.kept.capacity().max(GROW_ALL_AT) {
            // A long line gets the room left in one step: grown by doubling, each earlier
            // buffer would still be the allocator's when the next is filled, and a line at the
            // limit would peak at about twice the limit.
            self.kept.reserve_exact(max - self.kept.len());
        }
        self.kept.extend_from_slice(&chunk[..take]);
        self.len += chunk.len();
        let consumed = newline.map_or(buf.len(), |i| i + 1);
        if newline.is_none() {
            return (consumed, None);
        }
        if self.kept.last() == Some(&b'\r') && self.kept.len() == self.len {
            self.kept.pop();
            self.len -= 1;
        }
        (consumed, Some(self.take()))
    }

    /// The last line, without its `\n`, at end of input (`None` if nothing was pending).
    pub(crate) fn finish(&mut self) -> Option<BoundedLine> {
        (self.len > 0).then(|| self.take())
    }

    fn take(&mut self) -> BoundedLine {
        BoundedLine {
            kept: std::mem::take(&mut self.kept),
            len: std::mem::take(&mut self.len),
        }
    }
}

/// Reads `\n`-terminated lines from `input` until end of file or a read error, or until `each`
/// returns `false`. A last line without its `\n` counts.
pub(crate) fn read_lines(
    mut input: impl std::io::Read,
    max: usize,
    mut each: impl FnMut(BoundedLine) -> bool,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = LineSplitter::default();
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut at = 0;
        while at < n {
            let (used, line) = lines.feed(&buf[at..n], max);
            at += used;
            if let Some(line) = line {
                if !each(line) {
                    return;
                }
            }
        }
    }
    if let Some(line) = lines.finish() {
        each(line);
    }
}

/// What a read of the worker's stdout gives: a line, or the end of the output.
pub(crate) enum Read {
    /// One complete line (or the last one, cut by end of file).
    Line(BoundedLine),
    /// The worker closed its stdout (exited, or crashed).
    Eof,
}

/// The stdout of one worker process.
pub(crate) struct StdoutLines {
    inner: Inner,
}

impl StdoutLines {
    /// Reads `stdout`, keeping at most `max` bytes of each line.
    pub(crate) fn new(stdout: StdoutPipe, max: usize) -> Self {
        StdoutLines {
            inner: Inner::new(stdout, max),
        }
    }

    /// The next line, waiting until `deadline` at most (then `Timeout`).
    pub(crate) fn next_until(&mut self, deadline: Instant) -> Result<Read, RecvTimeoutError> {
        self.inner.next_until(deadline)
    }
}

/// A worker's stdout: a pipe from a spawned or a forked worker.
#[cfg(unix)]
pub(crate) type StdoutPipe = std::fs::File;
/// A worker's stdout.
#[cfg(not(unix))]
pub(crate) type StdoutPipe = ChildStdout;

#[cfg(unix)]
struct Inner {
    stdout: StdoutPipe,
    buf: Box<[u8]>,
    /// The unread bytes of `buf`: `buf[pos..end]`.
    pos: usize,
    end: usize,
    lines: LineSplitter,
    max: usize,
    eof: bool,
}

#[cfg(unix)]
impl Inner {
    fn new(stdout: StdoutPipe, max: usize) -> Self {
        Inner {
            stdout,
            buf: vec![0u8; 64 * 1024].into_boxed_slice(),
            pos: 0,
            end: 0,
            lines: LineSplitter::default(),
            max,
            eof: false,
        }
    }

    fn next_until(&mut self, deadline: Instant) -> Result<Read, RecvTimeoutError> {
        use std::io::Read as _;
        loop {
            while self.pos < self.end {
                let (used, line) = self.lines.feed(&self.buf[self.pos..self.end], self.max);
                self.pos += used;
                if let Some(line) = line {
                    return Ok(Read::Line(line));
                }
            }
            if self.eof {
                return Ok(self.lines.finish().map_or(Read::Eof, Read::Line));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RecvTimeoutError::Timeout);
            }
            let mut fds = [rustix::event::PollFd::new(
                &self.stdout,
                rustix::event::PollFlags::IN,
            )];
            let timeout = rustix::event::Timespec {
                tv_sec: left.as_secs().min(i64::MAX as u64) as i64,
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(0) => continue, // re-checks the deadline
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                // `poll` itself failed (not the pipe): the read blocks or reports the error.
                Err(_) => {}
            }
            // Readable, hung up or in error: a read returns data, end of file, or the error.
            match self.stdout.read(&mut self.buf) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.pos = 0;
                    self.end = n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => self.eof = true,
            }
        }
    }
}

#[cfg(not(unix))]
struct Inner {
    rx: crossbeam_channel::Receiver<Read>,
}

#[cfg(not(unix))]
impl Inner {
    fn new(stdout: ChildStdout, max: usize) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            read_lines(stdout, max, |line| tx.send(Read::Line(line)).is_ok());
            let _ = tx.send(Read::Eof);
        });
        Inner { rx }
    }

    fn next_until(&mut self, deadline: Instant) -> Result<Read, RecvTimeoutError> {
        match self
            .rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Err(RecvTimeoutError::Disconnected) => Ok(Read::Eof),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_split_across_reads_is_whole() {
        let mut s = LineSplitter::default();
        assert!(s.feed(b"{\"id\"", 100).1.is_none());
        let (used, line) = s.feed(b":1}\n{\"id\":2}\n", 100);
        assert_eq!(used, 4);
        assert_eq!(line.unwrap().kept, b"{\"id\":1}");
        assert!(s.finish().is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_worker_that_is_silent_times_out_and_one_that_exits_ends() {
        use std::process::{Command, Stdio};
        use std::time::Duration;
        let mut child = Command::new("sh")
            .args(["-c", "sleep 0.3; printf 'one\\ntwo'"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = std::os::fd::OwnedFd::from(child.stdout.take().unwrap());
        let mut out = StdoutLines::new(stdout.into(), 1024);
        let started = Instant::now();
        assert!(matches!(
            out.next_until(Instant::now() + Duration::from_millis(50)),
            Err(RecvTimeoutError::Timeout)
        ));
        assert!(started.elapsed() >= Duration::from_millis(50));
        let far = Instant::now() + Duration::from_secs(30);
        assert!(matches!(out.next_until(far), Ok(Read::Line(l)) if l.kept == b"one"));
        assert!(matches!(out.next_until(far), Ok(Read::Line(l)) if l.kept == b"two"));
        assert!(matches!(out.next_until(far), Ok(Read::Eof)));
        assert!(matches!(out.next_until(far), Ok(Read::Eof)));
        child.wait().unwrap();
    }
}
