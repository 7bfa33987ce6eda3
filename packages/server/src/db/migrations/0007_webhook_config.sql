-- Webhook configuration per client: the active URL, and every request to change it with its proof of
-- control (operator contract section 7). The pending change is the client's one request in 'verifying';
-- the other rows are the history.

CREATE TABLE webhook_configs (
  client_id   text PRIMARY KEY REFERENCES clients(id),
  -- The URL events are delivered to; null when the client has none (or never proved one).
  url         text,
  updated_at  timestamptz NOT NULL
);

CREATE TABLE webhook_change_requests (
  id               text PRIMARY KEY,
  -- Order of the requests (history lists newest first); timestamps can tie.
  seq              bigserial NOT NULL UNIQUE,
  client_id        text NOT NULL REFERENCES clients(id),
  requested_url    text NOT NULL,
  -- verifying: the pending change; proven: applied; rejected: reachable but wrong answer (or a refused
  -- address at connect time); expired: unreachable for the whole verification window; superseded: the
  -- client asked for another URL (or the active one) before this one was proven.
  status           text NOT NULL
                   CHECK (status IN ('verifying', 'proven', 'rejected', 'expired', 'superseded')),
  reason           text,
  -- The webhook.verification event: one id and body for every attempt, like any redelivered event.
  event_id         text NOT NULL UNIQUE,
  challenge        text NOT NULL,
  body             text NOT NULL,
  -- Numbered by the claim that makes the attempt, so the synchronous attempt of PUT and the background
  -- worker never make (or record) the same attempt twice.
  attempts         int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at  timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL,
  requested_at     timestamptz NOT NULL,
  resolved_at      timestamptz,
  CHECK ((status = 'verifying') = (resolved_at IS NULL))
);
-- One pending change per client; concurrent PUTs serialise on the webhook_configs row before inserting.
CREATE UNIQUE INDEX webhook_change_requests_one_pending ON webhook_change_requests (client_id)
  WHERE status = 'verifying';
CREATE INDEX webhook_change_requests_due ON webhook_change_requests (next_attempt_at) WHERE status = 'verifying';
CREATE INDEX webhook_change_requests_client ON webhook_change_requests (client_id, seq);
