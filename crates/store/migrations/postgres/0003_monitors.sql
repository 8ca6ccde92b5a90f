-- Schema 3: the reports `oloproof monitor` computed (ids `mon_<ULID>`, sortable by time), read
-- back by `oloproof report mon_…` and the viewer's monitor pages.
CREATE TABLE IF NOT EXISTS monitors(
  id TEXT PRIMARY KEY,
  created_ms BIGINT NOT NULL,
  traffic TEXT NOT NULL,
  content_json TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS monitors_created ON monitors(created_ms);
