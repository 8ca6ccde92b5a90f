-- Schema 2: the OTLP/HTTP requests `oloproof collect` received, verbatim, in arrival order
-- (`oloproof import --collected` reads them through the same readers as a file).
CREATE TABLE IF NOT EXISTS collected_requests(
  seq BIGSERIAL PRIMARY KEY,
  received_ms BIGINT NOT NULL,
  encoding TEXT NOT NULL,
  spans BIGINT NOT NULL,
  body BYTEA NOT NULL
);
