-- The money path's functions plan each of their statements once per connection. Left to the plan cache, a
-- statement whose generic plan looks dearer than a plan for the values at hand is planned again on every call, and
-- with a batch of one or two (every payment on a quiet service) several of these were: the sandbox bank's line
-- insert, the booking's payment update and event insert, the read of a payment's JSON, 0.1-0.2 ms of planning each
-- per call on PostgreSQL (pg_stat_statements with track_planning, requests one at a time). A step of one payment took
-- 0.80 of its time with generic plans on PostgreSQL and 0.82 on the embedded database (bench/step-bench.ts,
-- alternated); a step of 12, whose statements were already generic, the same. The generic plans are the index paths
-- every call of a busy service already runs: these functions keep enable_seqscan off, and
-- test/payments/index-only-plans.test.ts watches what each call reads. consume_nonces has planned this way since
-- 0032. A migration that restates one of these functions whole must restate this setting with it (CREATE OR
-- REPLACE keeps only the settings it names): test/db/function-settings.test.ts says so.
ALTER FUNCTION reserve_payments(jsonb, timestamptz) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION book_payments(jsonb, timestamptz) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION sandbox_submit_transfers(jsonb) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION payments_json(text[]) SET plan_cache_mode = force_generic_plan;
