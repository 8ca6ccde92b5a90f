//! The progress bar: on stderr when it is a terminal, never in CI.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oloproof_core::trace::Trace;
use oloproof_engine::run::RunObserver;

/// Draws cases done, errors, cache hits and the ETA.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    cache_hits: u64,
}

impl Progress {
    /// A bar if stderr is a terminal and `CI` is unset.
    pub(crate) fn for_terminal() -> Self {
        let enabled = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        Progress {
            bar: enabled.then(|| ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())),
            cache_hits: 0,
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl RunObserver for Progress {
    fn started(&mut self, run_id: &str, _total: u64, pending: u64) {
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

    fn case_done(&mut self, trace: &Trace, errors: u64) {
        if trace.cache.execution {
            self.cache_hits += 1;
        }
        if let Some(bar) = &self.bar {
            bar.inc(1);
            bar.set_message(format!("{errors} errors · {} cache hits", self.cache_hits));
        }
    }
}
