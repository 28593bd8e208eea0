-- The SQL projection of slackpoll's read model, Postgres (docs/sql.md). The tables
-- live in the schema projection.postgres.schema names (slackpoll by default); several
-- daemons (workspaces) may feed one database: every row carries team_id.

-- +goose Up
CREATE TABLE projection_state (
    team_id     text PRIMARY KEY,
    cursor_seq  bigint NOT NULL DEFAULT 0,
    cursor_at   timestamptz,
    synced_at   timestamptz,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE conversations (
    team_id       text NOT NULL,
    channel       text NOT NULL,
    name          text NOT NULL,
    type          text NOT NULL,
    status        text NOT NULL,
    needed_scope  text,
    is_archived   boolean NOT NULL,
    discovered    boolean NOT NULL,
    last_swept_at timestamptz,
    PRIMARY KEY (team_id, channel)
);

CREATE TABLE messages (
    id               bigint PRIMARY KEY,
    team_id          text NOT NULL,
    channel          text NOT NULL,
    ts               text NOT NULL,
    posted_at        timestamptz NOT NULL,
    thread_ts        text,
    is_reply         boolean NOT NULL,
    user_id          text,
    user_label       text NOT NULL,
    bot_id           text,
    subtype          text,
    text             text NOT NULL,
    search_text      text NOT NULL,
    edited_user      text,
    edited_ts        text,
    deleted          boolean NOT NULL,
    missing_since    timestamptz,
    own              boolean NOT NULL,
    record           text,
    watched          boolean NOT NULL,
    tracked          boolean NOT NULL,
    reply_count      integer NOT NULL,
    latest_reply     text,
    reply_watermark  text,
    last_polled_at   timestamptz,
    thread_synced_at timestamptz,
    changed_seq      bigint NOT NULL,
    changed_at       timestamptz NOT NULL,
    content_hash     bigint NOT NULL,
    text_hash        bigint NOT NULL,
    -- The search index's tokens (words, and pairs of CJK characters), made by
    -- slackpoll with their positions, so that no text search configuration of the
    -- server changes what a query finds.
    search           tsvector NOT NULL,
    UNIQUE (team_id, channel, ts)
);
CREATE INDEX messages_thread ON messages (team_id, channel, thread_ts) WHERE thread_ts IS NOT NULL;
CREATE INDEX messages_user ON messages (team_id, user_id);
CREATE INDEX messages_record ON messages (team_id, record) WHERE record IS NOT NULL;
CREATE INDEX messages_changed ON messages (team_id, changed_seq);
-- A small pending list: a search scans it whole, so it is kept to 512 kB (the
-- default is 4 MB) and flushed after every sync.
CREATE INDEX messages_search ON messages USING gin (search) WITH (gin_pending_list_limit = 512);

CREATE TABLE reactions (
    team_id  text NOT NULL,
    channel  text NOT NULL,
    ts       text NOT NULL,
    reaction text NOT NULL,
    user_id  text NOT NULL,
    PRIMARY KEY (team_id, channel, ts, reaction, user_id)
);
CREATE INDEX reactions_user ON reactions (team_id, user_id);

CREATE TABLE reaction_counts (
    team_id  text NOT NULL,
    channel  text NOT NULL,
    ts       text NOT NULL,
    reaction text NOT NULL,
    count    integer NOT NULL,
    PRIMARY KEY (team_id, channel, ts, reaction)
);

CREATE TABLE mentions (
    team_id text NOT NULL,
    channel text NOT NULL,
    ts      text NOT NULL,
    kind    text NOT NULL,
    target  text NOT NULL,
    PRIMARY KEY (team_id, channel, ts, kind, target)
);
CREATE INDEX mentions_target ON mentions (team_id, kind, target);

CREATE TABLE users (
    team_id      text NOT NULL,
    user_id      text NOT NULL,
    display_name text NOT NULL,
    real_name    text NOT NULL,
    label        text NOT NULL,
    deleted      boolean NOT NULL,
    lookup_error text,
    fetched_at   timestamptz,
    PRIMARY KEY (team_id, user_id)
);

CREATE VIEW records AS
    SELECT team_id, record, channel, ts FROM messages WHERE record IS NOT NULL;

CREATE VIEW threads AS
    SELECT p.team_id, p.channel, p.ts AS thread_ts, p.user_id, p.user_label, p.text,
           p.reply_count, p.latest_reply, p.reply_watermark, p.thread_synced_at,
           (SELECT count(*) FROM messages r
             WHERE r.team_id = p.team_id AND r.channel = p.channel AND r.thread_ts = p.ts AND r.is_reply) AS replies_stored,
           coalesce(p.reply_watermark = p.latest_reply, false) AS complete
      FROM messages p
     WHERE NOT p.is_reply AND (p.thread_ts = p.ts OR p.reply_count > 0 OR p.latest_reply IS NOT NULL);

CREATE VIEW changed_since AS
    SELECT changed_seq, changed_at, team_id, channel, ts, thread_ts, is_reply, user_id, user_label,
           text, deleted, missing_since, record, last_polled_at
      FROM messages;

-- +goose Down
DROP VIEW changed_since;
DROP VIEW threads;
DROP VIEW records;
DROP TABLE users;
DROP TABLE mentions;
DROP TABLE reaction_counts;
DROP TABLE reactions;
DROP TABLE messages;
DROP TABLE conversations;
DROP TABLE projection_state;
