-- Schema 1: the tables of the first stores. Every statement is idempotent: a store written
-- by an early build that lacks a later table of schema 1 gets it when migrated.
CREATE TABLE IF NOT EXISTS runs(
  id TEXT PRIMARY KEY,
  created_ms INTEGER NOT NULL,
  status TEXT NOT NULL,
  config_path TEXT NOT NULL,
  settings_json TEXT NOT NULL,
  identity TEXT NOT NULL,
  system_json TEXT NOT NULL,
  summary_json TEXT,
  parent TEXT,
  finished_ms INTEGER);
CREATE TABLE IF NOT EXISTS run_cases(
  run_id TEXT NOT NULL REFERENCES runs(id),
  ord INTEGER NOT NULL,
  case_id TEXT NOT NULL,
  case_json TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  attempt INTEGER NOT NULL DEFAULT 0,
  lease_until INTEGER,
  trace_json TEXT,
  PRIMARY KEY(run_id, case_id));
CREATE INDEX IF NOT EXISTS run_cases_state ON run_cases(run_id, state, ord);
CREATE TABLE IF NOT EXISTS verdicts(
  run_id TEXT NOT NULL,
  case_id TEXT NOT NULL,
  criterion TEXT NOT NULL,
  verdict_json TEXT NOT NULL,
  PRIMARY KEY(run_id, case_id, criterion));
CREATE TABLE IF NOT EXISTS diagnoses(
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  content_json TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS diagnoses_run ON diagnoses(run_id, created_ms);
CREATE TABLE IF NOT EXISTS comparisons(
  id TEXT PRIMARY KEY,
  candidate TEXT NOT NULL,
  baseline TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  content_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calibrations(
  id TEXT PRIMARY KEY,
  judge TEXT NOT NULL,
  identity TEXT NOT NULL,
  passed INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  content_json TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS calibrations_identity ON calibrations(identity, created_ms);
CREATE TABLE IF NOT EXISTS cache(
  layer TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY(layer, key));
