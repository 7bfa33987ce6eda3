-- Webhook signing keys (the deployment's JWKS) and the log of every delivery attempt of an outbox event.

CREATE TABLE webhook_signing_keys (
  -- RFC 7638 thumbprint of the public key: stable, and names the key in the JWS header and the JWKS.
  kid              text PRIMARY KEY,
  -- A deployment refuses keys of the other environment, so a shared database cannot mix the two key sets.
  environment      text NOT NULL CHECK (environment IN ('sandbox', 'production')),
  -- active: signs and is published; retiring: published only, so signatures made before a rotation still
  -- verify; retired: neither, and its private key is erased.
  status           text NOT NULL CHECK (status IN ('active', 'retiring', 'retired')),
  public_jwk       jsonb NOT NULL,
  -- PKCS#8 DER sealed with AES-256-GCM under the master key (never the PEM); null once retired.
  private_key_enc  text CHECK (status = 'retired' OR private_key_enc IS NOT NULL),
  created_at       timestamptz NOT NULL,
  rotated_at       timestamptz,
  retired_at       timestamptz
);
-- At most one signing key at a time; concurrent first starts race on this index and the loser rereads.
CREATE UNIQUE INDEX webhook_signing_keys_one_active ON webhook_signing_keys ((true)) WHERE status = 'active';

CREATE TABLE webhook_attempts (
  id            bigserial PRIMARY KEY,
  event_id      text NOT NULL REFERENCES events(id),
  client_id     text NOT NULL REFERENCES clients(id),
  url           text NOT NULL,
  -- Numbered by the claim that made it, so two workers can never record (or send) the same attempt.
  attempt       int NOT NULL CHECK (attempt > 0),
  -- null when no HTTP answer arrived; error then says why (timeout, refused, forbidden address, ...).
  status_code   int,
  error         text,
  duration_ms   int NOT NULL CHECK (duration_ms >= 0),
  attempted_at  timestamptz NOT NULL,
  UNIQUE (event_id, attempt)
);
CREATE INDEX webhook_attempts_client ON webhook_attempts (client_id, id);
