//! Exit codes: a public contract, documented in `--help` and the README.

/// Success, or the gate passed.
pub(crate) const SUCCESS: u8 = 0;
/// Usage or configuration error (bad flags, invalid `oloproof.yaml` or case file, unknown run).
pub(crate) const USAGE: u8 = 2;
/// The gate blocked: `compare`'s policy, `gate`'s thresholds, or a failed calibration.
pub(crate) const GATE_BLOCKED: u8 = 3;
/// The run is incomplete: system errors, or a criterion's missing verdicts, above
/// `--max-error-rate`; a run that stopped early; or the system or store failed; or a pairwise
/// comparison's judge failed on more than the policy's `max_missing_rate` of the cases.
pub(crate) const INCOMPLETE: u8 = 4;

/// The text appended to `--help`.
pub(crate) const HELP: &str = "Exit codes:
  0  success (or the gate passed)
  2  usage or configuration error: bad flags, invalid oloproof.yaml or case file, unknown run
  3  gate blocked (Gate: BLOCK: a comparison's policy, `gate`'s thresholds, or a judge that failed its calibration)
  4  run incomplete: more system errors than --max-error-rate allows, or a criterion missing (e.g. a
     judge that never answered) on more than that share of cases, or the run stopped early, or the
     system or store failed; for compare --pairwise, judge errors above max_missing_rate";
