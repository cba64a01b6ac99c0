CREATE TABLE runs (
    run_id      TEXT PRIMARY KEY,
    goal        TEXT NOT NULL,
    status      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    last_seq    INTEGER NOT NULL,
    steps_done  INTEGER NOT NULL,
    steps_total INTEGER NOT NULL,
    replans     INTEGER NOT NULL,
    tokens      INTEGER NOT NULL,
    snapshot    TEXT NOT NULL
) STRICT;
CREATE INDEX runs_newest_first ON runs (started_at DESC, run_id DESC);
CREATE TABLE events (
    run_id TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    at     TEXT NOT NULL,
    kind   TEXT NOT NULL,
    body   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;
CREATE TABLE leases (
    run_id TEXT PRIMARY KEY,
    holder TEXT,
    fence  INTEGER NOT NULL,
    until  TEXT
) STRICT;
CREATE TABLE idempotency (
    key          TEXT PRIMARY KEY,
    run_id       TEXT NOT NULL,
    step         TEXT NOT NULL,
    args_hash    TEXT NOT NULL,
    outcome      TEXT,
    begun_at     TEXT NOT NULL,
    completed_at TEXT
) STRICT;
CREATE INDEX idempotency_by_run ON idempotency (run_id);
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
