//! Progress on stderr: a bar when stderr is a terminal (never in CI), else a periodic line.
//!
//! A long judged run in CI or under `nohup` would otherwise print nothing for minutes: when
//! stderr is not a terminal, a line `progress: run_… · 40 of 130 cases · 3 judge calls in
//! flight · 0 errors · 0 missing verdicts` is printed every 30 s (`OLOPROOF_PROGRESS_INTERVAL_S` sets the
//! interval, `0` turns it off), starting one interval after the run starts.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oloproof_core::trace::Trace;
use oloproof_engine::run::RunObserver;

/// The default interval of the periodic progress line.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);

/// Draws cases done, errors, cache hits and the ETA.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    cache_hits: u64,
    lines: Option<Ticker>,
}

/// What the periodic line reports, shared with its thread.
#[derive(Default)]
struct Counts {
    run_id: Mutex<String>,
    total: AtomicU64,
    done: AtomicU64,
    errors: AtomicU64,
    missing: AtomicU64,
}

/// The thread printing the periodic line; stops when dropped.
struct Ticker {
    counts: Arc<Counts>,
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(interval: Duration) -> Ticker {
        let counts = Arc::new(Counts::default());
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let shared = Arc::clone(&counts);
        let thread = std::thread::spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(interval)
            {
                let run_id = shared
                    .run_id
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                if run_id.is_empty() {
                    continue;
                }
                let line = format!(
                    "progress: {run_id} · {} of {} cases · {} judge calls in flight · {} errors · {} missing verdicts",
                    shared.done.load(Ordering::Relaxed),
                    shared.total.load(Ordering::Relaxed),
                    oloproof_judge::calls_in_flight(),
                    shared.errors.load(Ordering::Relaxed),
                    shared.missing.load(Ordering::Relaxed),
                );
                // stderr may be closed; progress is best effort and never fails the run.
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
        });
        Ticker {
            counts,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            // A panicked progress thread has nothing left to report.
            let _ = t.join();
        }
    }
}

/// The periodic line's interval: `OLOPROOF_PROGRESS_INTERVAL_S` (seconds, `0` for none), else
/// [`DEFAULT_INTERVAL`] (also, with a warning, when the variable is not a number).
fn line_interval() -> Option<Duration> {
    match std::env::var("OLOPROOF_PROGRESS_INTERVAL_S") {
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(0.0) => None,
            Ok(s) if s > 0.0 && s.is_finite() => Some(Duration::from_secs_f64(s)),
            _ => {
                // Best effort, like the line itself: say so and keep the default.
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "warning: OLOPROOF_PROGRESS_INTERVAL_S={v:?} is not a number of seconds (0 turns the progress line off); using {} s",
                    DEFAULT_INTERVAL.as_secs()
                );
                Some(DEFAULT_INTERVAL)
            }
        },
        Err(_) => Some(DEFAULT_INTERVAL),
    }
}

impl Progress {
    /// A bar if stderr is a terminal and `CI` is unset, else the periodic line.
    pub(crate) fn for_terminal() -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bar = terminal && std::env::var_os("CI").is_none();
        Progress {
            bar: bar.then(|| ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())),
            cache_hits: 0,
            lines: (!terminal).then(line_interval).flatten().map(Ticker::start),
        }
    }

    pub(crate) fn finish(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        self.lines = None;
    }
}

impl RunObserver for Progress {
    fn started(&mut self, run_id: &str, total: u64, pending: u64) {
        crate::interrupt::started(run_id);
        if let Some(lines) = &self.lines {
            *lines
                .counts
                .run_id
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = run_id.to_string();
            lines.counts.total.store(total, Ordering::Relaxed);
            lines
                .counts
                .done
                .store(total.saturating_sub(pending), Ordering::Relaxed);
        }
        if let Some(bar) = &self.bar {
            bar.set_length(pending);
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix} {bar:30} {pos}/{len} cases · {msg} · ETA {eta}",
            ) {
                bar.set_style(style);
            }
            bar.set_prefix(run_id.to_string());
            bar.set_message("0 errors · 0 cache hits");
        }
    }

    fn case_done(&mut self, trace: &Trace, errors: u64, missing: u64) {
        if trace.cache.execution {
            self.cache_hits += 1;
        }
        if let Some(lines) = &self.lines {
            lines.counts.done.fetch_add(1, Ordering::Relaxed);
            lines.counts.errors.store(errors, Ordering::Relaxed);
            lines.counts.missing.store(missing, Ordering::Relaxed);
        }
        if let Some(bar) = &self.bar {
            bar.inc(1);
            bar.set_message(format!("{errors} errors · {} cache hits", self.cache_hits));
        }
    }
}
