-- Schema 2: real leases (who holds a claimed case, read by the next claim) and each done
-- case's cache use (summed into the summary of a run executed by several workers).
ALTER TABLE run_cases ADD COLUMN lease_holder TEXT;
ALTER TABLE run_cases ADD COLUMN cache_use_json TEXT;
CREATE INDEX IF NOT EXISTS run_cases_lease ON run_cases(run_id, state, lease_until);
