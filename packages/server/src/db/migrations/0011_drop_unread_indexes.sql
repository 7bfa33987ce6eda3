-- Indexes no query reads any more, each a write on the payment path: the daily limit now lives in
-- key_daily_usage (no scan of the day's payments), and nothing looks events up by client.
DROP INDEX IF EXISTS payments_key_day;
DROP INDEX IF EXISTS events_client;
