-- Operator replays of webhook events (who, when, why, and the state the event was in), kept forever like payment
-- resolutions: a replay sends a client a signed event again, so the operator's reason stays on record.
CREATE TABLE webhook_replays (
  id             bigserial PRIMARY KEY,
  event_id       text NOT NULL REFERENCES events(id),
  from_status    text NOT NULL,
  requested_by   text NOT NULL,
  note           text NOT NULL,
  created_at     timestamptz NOT NULL
);
CREATE INDEX webhook_replays_event ON webhook_replays (event_id, id);
