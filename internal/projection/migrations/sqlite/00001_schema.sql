-- The SQL projection of slackpoll's read model, SQLite (docs/sql.md).
-- Every table carries team_id: one file may one day hold several workspaces.

-- +goose Up
CREATE TABLE projection_state (
    team_id     TEXT PRIMARY KEY,
    cursor_seq  INTEGER NOT NULL DEFAULT 0,
    cursor_at   TEXT,
    synced_at   TEXT,
    updated_at  TEXT NOT NULL
);

CREATE TABLE conversations (
    team_id       TEXT NOT NULL,
    channel       TEXT NOT NULL,
    name          TEXT NOT NULL,
    type          TEXT NOT NULL,
    status        TEXT NOT NULL,
    needed_scope  TEXT,
    is_archived   INTEGER NOT NULL,
    discovered    INTEGER NOT NULL,
    last_swept_at TEXT,
    PRIMARY KEY (team_id, channel)
);

CREATE TABLE messages (
    id               INTEGER PRIMARY KEY,
    team_id          TEXT NOT NULL,
    channel          TEXT NOT NULL,
    ts               TEXT NOT NULL,
    posted_at        TEXT NOT NULL,
    thread_ts        TEXT,
    is_reply         INTEGER NOT NULL,
    user_id          TEXT,
    user_label       TEXT NOT NULL,
    bot_id           TEXT,
    subtype          TEXT,
    text             TEXT NOT NULL,
    search_text      TEXT NOT NULL,
    edited_user      TEXT,
    edited_ts        TEXT,
    deleted          INTEGER NOT NULL,
    missing_since    TEXT,
    own              INTEGER NOT NULL,
    record           TEXT,
    watched          INTEGER NOT NULL,
    tracked          INTEGER NOT NULL,
    reply_count      INTEGER NOT NULL,
    latest_reply     TEXT,
    reply_watermark  TEXT,
    last_polled_at   TEXT,
    thread_synced_at TEXT,
    changed_seq      INTEGER NOT NULL,
    changed_at       TEXT NOT NULL,
    content_hash     INTEGER NOT NULL,
    text_hash        INTEGER NOT NULL,
    UNIQUE (team_id, channel, ts)
);
CREATE INDEX messages_thread ON messages (team_id, channel, thread_ts) WHERE thread_ts IS NOT NULL;
CREATE INDEX messages_user ON messages (team_id, user_id);
CREATE INDEX messages_record ON messages (team_id, record) WHERE record IS NOT NULL;
CREATE INDEX messages_changed ON messages (team_id, changed_seq);

CREATE TABLE reactions (
    team_id  TEXT NOT NULL,
    channel  TEXT NOT NULL,
    ts       TEXT NOT NULL,
    reaction TEXT NOT NULL,
    user_id  TEXT NOT NULL,
    PRIMARY KEY (team_id, channel, ts, reaction, user_id)
) WITHOUT ROWID;
CREATE INDEX reactions_user ON reactions (team_id, user_id);

CREATE TABLE reaction_counts (
    team_id  TEXT NOT NULL,
    channel  TEXT NOT NULL,
    ts       TEXT NOT NULL,
    reaction TEXT NOT NULL,
    count    INTEGER NOT NULL,
    PRIMARY KEY (team_id, channel, ts, reaction)
) WITHOUT ROWID;

CREATE TABLE mentions (
    team_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    ts      TEXT NOT NULL,
    kind    TEXT NOT NULL,
    target  TEXT NOT NULL,
    PRIMARY KEY (team_id, channel, ts, kind, target)
) WITHOUT ROWID;
CREATE INDEX mentions_target ON mentions (team_id, kind, target);

CREATE TABLE users (
    team_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    display_name TEXT NOT NULL,
    real_name    TEXT NOT NULL,
    label        TEXT NOT NULL,
    deleted      INTEGER NOT NULL,
    lookup_error TEXT,
    fetched_at   TEXT,
    PRIMARY KEY (team_id, user_id)
);

-- The search index: tokens made by slackpoll (words, and pairs of CJK characters),
-- keyed by messages.id; contentless, since the text is in messages.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    tokens, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0'
);

CREATE VIEW records AS
    SELECT team_id, record, channel, ts FROM messages WHERE record IS NOT NULL;

CREATE VIEW threads AS
    SELECT p.team_id, p.channel, p.ts AS thread_ts, p.user_id, p.user_label, p.text,
           p.reply_count, p.latest_reply, p.reply_watermark, p.thread_synced_at,
           (SELECT count(*) FROM messages r
             WHERE r.team_id = p.team_id AND r.channel = p.channel AND r.thread_ts = p.ts AND r.is_reply = 1) AS replies_stored,
           p.reply_watermark IS NOT NULL AND p.reply_watermark = p.latest_reply AS complete
      FROM messages p
     WHERE p.is_reply = 0 AND (p.thread_ts = p.ts OR p.reply_count > 0 OR p.latest_reply IS NOT NULL);

CREATE VIEW changed_since AS
    SELECT changed_seq, changed_at, team_id, channel, ts, thread_ts, is_reply, user_id, user_label,
           text, deleted, missing_since, record, last_polled_at
      FROM messages;

-- +goose Down
DROP VIEW changed_since;
DROP VIEW threads;
DROP VIEW records;
DROP TABLE messages_fts;
DROP TABLE users;
DROP TABLE mentions;
DROP TABLE reaction_counts;
DROP TABLE reactions;
DROP TABLE messages;
DROP TABLE conversations;
DROP TABLE projection_state;
