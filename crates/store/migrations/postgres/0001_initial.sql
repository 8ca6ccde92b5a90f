-- Schema 1 of the Postgres store: the SQLite store's schema 2, with Postgres types. Times are
-- Unix milliseconds (BIGINT); leases are compared with the server's clock, so workers on
-- machines whose clocks differ agree on when a lease expires.
CREATE TABLE IF NOT EXISTS runs(
  id TEXT PRIMARY KEY,
  created_ms BIGINT NOT NULL,
  status TEXT NOT NULL,
  config_path TEXT NOT NULL,
  settings_json TEXT NOT NULL,
  identity TEXT NOT NULL,
  system_json TEXT NOT NULL,
  summary_json TEXT,
  parent TEXT,
  finished_ms BIGINT);
CREATE TABLE IF NOT EXISTS run_cases(
  run_id TEXT NOT NULL REFERENCES runs(id),
  ord BIGINT NOT NULL,
  case_id TEXT NOT NULL,
  case_json TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  attempt BIGINT NOT NULL DEFAULT 0,
  lease_until BIGINT,
  lease_holder TEXT,
  trace_json TEXT,
  cache_use_json TEXT,
  PRIMARY KEY(run_id, case_id));
CREATE INDEX IF NOT EXISTS run_cases_state ON run_cases(run_id, state, ord);
-- The claim's predicate: pending cases of a run whose lease is free.
CREATE INDEX IF NOT EXISTS run_cases_lease ON run_cases(run_id, state, lease_until);
CREATE TABLE IF NOT EXISTS verdicts(
  run_id TEXT NOT NULL,
  case_id TEXT NOT NULL,
  criterion TEXT NOT NULL,
  verdict_json TEXT NOT NULL,
  PRIMARY KEY(run_id, case_id, criterion));
CREATE TABLE IF NOT EXISTS diagnoses(
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  content_json TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS diagnoses_run ON diagnoses(run_id, created_ms);
CREATE TABLE IF NOT EXISTS comparisons(
  id TEXT PRIMARY KEY,
  candidate TEXT NOT NULL,
  baseline TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  content_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calibrations(
  seq BIGSERIAL,
  id TEXT PRIMARY KEY,
  judge TEXT NOT NULL,
  identity TEXT NOT NULL,
  passed BOOLEAN NOT NULL,
  created_ms BIGINT NOT NULL,
  content_json TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS calibrations_identity ON calibrations(identity, created_ms);
CREATE TABLE IF NOT EXISTS cache(
  layer TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  PRIMARY KEY(layer, key));
