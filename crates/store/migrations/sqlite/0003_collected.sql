-- Schema 3: the OTLP/HTTP requests `oloproof collect` received, verbatim, in arrival order
-- (`oloproof import --collected` reads them through the same readers as a file).
CREATE TABLE IF NOT EXISTS collected_requests(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  received_ms INTEGER NOT NULL,
  encoding TEXT NOT NULL,
  spans INTEGER NOT NULL,
  body BLOB NOT NULL
);
