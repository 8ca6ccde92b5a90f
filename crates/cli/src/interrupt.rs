//! Ctrl-C and SIGTERM during `oloproof run`: the run is marked `interrupted` in the store, the
//! user is told how many cases are kept and how to resume, and the process exits 130.
//!
//! Every finished case is already committed (the engine commits as cases finish), so stopping
//! at once loses nothing but the cases in flight, which stay pending; `oloproof run --resume`
//! runs them. The workers are child processes reading our pipes: they end when we do.

use std::io::Write;
use std::sync::Mutex;

use oloproof_core::store::{RunId, StoreLocation};

/// The exit code of a run stopped by a signal (128 + SIGINT), as shells report it.
pub(crate) const INTERRUPTED: i32 = 130;

/// The run in progress: its store and, once started, its id.
struct Active {
    store: StoreLocation,
    run_id: Option<String>,
}

static ACTIVE: Mutex<Option<Active>> = Mutex::new(None);

/// Installs the handler (once per process) for a run whose store is `store`.
pub(crate) fn watch(store: StoreLocation) {
    *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = Some(Active {
        store,
        run_id: None,
    });
    // Only one handler can be installed; a second `watch` (never in one process today) keeps
    // the first, which reads the same global.
    let _ = ctrlc::set_handler(on_signal);
}

/// Records the id of the run that started (the observer's `started`).
pub(crate) fn started(run_id: &str) {
    if let Some(active) = ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        active.run_id = Some(run_id.to_string());
    }
}

fn on_signal() {
    let active = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
    let mut err = std::io::stderr().lock();
    // Clear the progress bar's line, if one is drawn.
    let _ = write!(err, "\r\x1b[2K");
    match active
        .as_ref()
        .and_then(|a| Some((&a.store, a.run_id.as_deref()?)))
    {
        Some((store, run_id)) => {
            let run = RunId::from(run_id);
            let kept = oloproof_store::open(store).and_then(|mut s| {
                s.mark_interrupted(&run)?;
                s.run(&run)
            });
            match kept {
                Ok(record) => {
                    let _ = writeln!(
                        err,
                        "interrupted: {} of {} cases finished and kept; run {run_id} is marked interrupted; resume with `oloproof run --resume {run_id}`",
                        record.done_count, record.case_count
                    );
                }
                Err(e) => {
                    let _ = writeln!(
                        err,
                        "interrupted: the finished cases are kept, but marking run {run_id} failed ({e}); resume with `oloproof run --resume {run_id}`"
                    );
                }
            }
        }
        None => {
            let _ = writeln!(
                err,
                "interrupted before the run started; nothing was stored"
            );
        }
    }
    let _ = err.flush();
    #[allow(clippy::exit)]
    std::process::exit(INTERRUPTED);
}
