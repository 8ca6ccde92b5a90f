-- Schema 5: a pipeline trace is stored with its passages written once (a `passages` table in
-- `pipeline` that its lists refer to; `oloproof_core::stored_trace`). No table changes: the
-- version is raised so that an Oloproof older than this form refuses the store with a clear
-- error instead of failing to read its traces. Rows written before stay as they were, and
-- are read as they were.
UPDATE meta SET value = value WHERE key = 'stored_trace_form';
