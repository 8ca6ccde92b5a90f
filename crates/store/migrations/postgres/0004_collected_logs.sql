-- Schema 4: `oloproof collect` also receives OTLP logs (`POST /v1/logs`: the GenAI
-- instrumentations' message content); each request says which signal it carries.
ALTER TABLE collected_requests ADD COLUMN IF NOT EXISTS signal TEXT NOT NULL DEFAULT 'traces';
