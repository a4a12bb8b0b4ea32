-- The audit log as a hash chain across the fleet (memory/chain.go,
-- pgstore/chain.go). ord numbers events as they are inserted
-- (memgate_events_ord); the sealer takes the committed ones in that order.
-- seq is the event's position in the chain, set once, when a sealer puts
-- it there (doc then holds the sealed form); NULL until then.
CREATE SEQUENCE memgate_events_ord;
ALTER TABLE memgate_events ADD COLUMN ord bigint, ADD COLUMN seq bigint;
CREATE UNIQUE INDEX memgate_events_seq ON memgate_events (seq);
CREATE INDEX memgate_events_unsealed ON memgate_events (ord) WHERE seq IS NULL;

-- The chain's newest event: one row, written by the sealer.
CREATE TABLE memgate_audit_head (
	one      boolean PRIMARY KEY DEFAULT true CHECK (one),
	seq      bigint NOT NULL,
	hash     text NOT NULL,
	event_id text COLLATE "C" NOT NULL
);

-- Still append-only, with three exceptions that keep the id, the record
-- and the shadowed flag: an event without a number gets one (ord, once,
-- nothing else: the events below); the sealer puts a numbered event into
-- the chain (seq, once, with its sealed doc); erasure and retention, which
-- say so (SET LOCAL memgate.redact = 'on'), remove an event's text and
-- keep its place.
CREATE OR REPLACE FUNCTION memgate_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'UPDATE' AND OLD.id = NEW.id AND OLD.record_id IS NOT DISTINCT FROM NEW.record_id
		AND OLD.shadowed = NEW.shadowed THEN
		IF OLD.seq IS NULL AND NEW.seq IS NULL AND OLD.ord IS NULL AND NEW.ord IS NOT NULL AND OLD.doc = NEW.doc THEN
			RETURN NEW;
		END IF;
		IF OLD.seq IS NULL AND NEW.seq IS NOT NULL AND OLD.ord IS NOT DISTINCT FROM NEW.ord THEN
			RETURN NEW;
		END IF;
		IF current_setting('memgate.redact', true) = 'on' AND NEW.seq IS NOT DISTINCT FROM OLD.seq
			AND NEW.ord IS NOT DISTINCT FROM OLD.ord THEN
			RETURN NEW;
		END IF;
	END IF;
	RAISE EXCEPTION 'memgate_events is append-only: % refused', TG_OP
		USING ERRCODE = 'insufficient_privilege';
END
$$;

-- Events written before the chain join it first, in id order (their time
-- order), when a sealer next runs: the one-time migration. What was done
-- to them before that cannot be told.
UPDATE memgate_events SET ord = o.n
	FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM memgate_events) o
	WHERE memgate_events.id = o.id;
SELECT setval('memgate_events_ord', COALESCE((SELECT max(ord) FROM memgate_events), 0) + 1, false);
ALTER TABLE memgate_events ALTER COLUMN ord SET DEFAULT nextval('memgate_events_ord');
