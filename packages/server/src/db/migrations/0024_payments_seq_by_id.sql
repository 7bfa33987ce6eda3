-- A payment's id is its sequence number written out ('pay_' and 16 digits, payments/repository.ts paymentIdOf, and
-- reserve_payments), so the primary key already keeps seq unique: its own unique index was one more entry written
-- on every insert and on every update that moves a payment (those are not HOT: state is indexed). The CHECK states
-- the tie the uniqueness now rests on, at the cost of one comparison per written row instead of an index entry.
ALTER TABLE payments DROP CONSTRAINT payments_seq_key;
ALTER TABLE payments ADD CONSTRAINT payments_id_is_seq CHECK (id = 'pay_' || lpad(seq::text, 16, '0'));
