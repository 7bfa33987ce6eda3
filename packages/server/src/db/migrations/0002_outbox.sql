-- Transactional outbox: a state change and its event row commit together. Delivery state lives on the
-- row so that a worker claims due events with FOR UPDATE SKIP LOCKED; every attempt is logged apart.

CREATE TABLE events (
  id               text PRIMARY KEY,
  -- Global order of creation; events of one payment are delivered in this order.
  seq              bigserial NOT NULL UNIQUE,
  client_id        text NOT NULL REFERENCES clients(id),
  type             text NOT NULL,
  test             boolean NOT NULL DEFAULT false,
  -- The payment whose transitions must reach the receiver in order; null for events of no payment.
  payment_id       text,
  -- The exact JSON text delivered (and signed) on every attempt, so redeliveries carry the same bytes.
  body             text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  delivery_status  text NOT NULL DEFAULT 'pending'
                   CHECK (delivery_status IN ('pending', 'delivered', 'dead', 'no_webhook')),
  attempts         int NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  last_error       text,
  delivered_at     timestamptz
);
CREATE INDEX events_due ON events (next_attempt_at, seq) WHERE delivery_status = 'pending';
CREATE INDEX events_payment ON events (payment_id, seq) WHERE payment_id IS NOT NULL;
CREATE INDEX events_client ON events (client_id, seq);
