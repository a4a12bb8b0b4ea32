-- The first schema: one table per entity the Badger store keeps under a
-- key prefix (store/tx.go), each entity as the same JSON bytes (doc), with
-- columns for what scans filter and order on. Ids compare bytewise
-- (COLLATE "C"), as Badger's keys do, so every scan returns the same order.

CREATE TABLE memgate_records (
	id             text COLLATE "C" PRIMARY KEY,
	slot_id        text COLLATE "C" NOT NULL,
	subject_id     text COLLATE "C" NOT NULL,
	status         text NOT NULL,
	layer          text NOT NULL,
	scope_user_id  text NOT NULL,
	scope_agent_id text NOT NULL,
	scope_app_id   text NOT NULL,
	scope_run_id   text NOT NULL,
	summary        text NOT NULL,
	-- Unix nanoseconds, not timestamptz (microseconds): search filters and
	-- orders on these, and must see the times the Badger store gives it.
	created_ns     bigint NOT NULL,
	activated_ns   bigint,
	-- version grows with every write of the row (search's entry version).
	version        bigint NOT NULL DEFAULT 1,
	doc            bytea NOT NULL
);
CREATE INDEX memgate_records_slot ON memgate_records (slot_id, id);
CREATE INDEX memgate_records_slot_pending ON memgate_records (slot_id, id) WHERE status = 'pending_review';
CREATE INDEX memgate_records_pending ON memgate_records (id) WHERE status = 'pending_review';
CREATE INDEX memgate_records_active ON memgate_records (subject_id, id) WHERE status = 'active';

-- The run/session (kind 'run') and agent/user (kind 'actor') ids a record
-- was written by, fixed on its first write as Badger's xr/ and xa/ keys are.
CREATE TABLE memgate_record_actors (
	kind      text NOT NULL,
	actor_id  text COLLATE "C" NOT NULL,
	record_id text COLLATE "C" NOT NULL,
	PRIMARY KEY (kind, actor_id, record_id)
);

CREATE TABLE memgate_slots (
	id         text COLLATE "C" PRIMARY KEY,
	subject_id text COLLATE "C" NOT NULL,
	doc        bytea NOT NULL
);
CREATE INDEX memgate_slots_subject ON memgate_slots (subject_id, id);

CREATE TABLE memgate_rollback_points (
	id  text COLLATE "C" PRIMARY KEY,
	doc bytea NOT NULL
);

-- The audit log: rows are inserted, never changed or removed (the trigger
-- below refuses it, whoever asks).
CREATE TABLE memgate_events (
	id        text COLLATE "C" PRIMARY KEY,
	record_id text COLLATE "C",
	shadowed  boolean NOT NULL,
	doc       bytea NOT NULL
);
CREATE INDEX memgate_events_record ON memgate_events (record_id, id) WHERE record_id IS NOT NULL;
CREATE INDEX memgate_events_shadowed ON memgate_events (id) WHERE shadowed;

CREATE FUNCTION memgate_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'memgate_events is append-only: % refused', TG_OP
		USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER memgate_events_append_only BEFORE UPDATE OR DELETE ON memgate_events
	FOR EACH ROW EXECUTE FUNCTION memgate_events_append_only();
CREATE TRIGGER memgate_events_no_truncate BEFORE TRUNCATE ON memgate_events
	FOR EACH STATEMENT EXECUTE FUNCTION memgate_events_append_only();

-- The outbox. A lease (owner, until) is taken by ClaimNotices so that one
-- instance of a fleet delivers each notice.
CREATE TABLE memgate_notices (
	id           text COLLATE "C" PRIMARY KEY,
	next_attempt timestamptz,
	lease_owner  text,
	lease_until  timestamptz,
	doc          bytea NOT NULL
);

CREATE TABLE memgate_kv (
	namespace text COLLATE "C" NOT NULL,
	key       text COLLATE "C" NOT NULL,
	value     bytea NOT NULL,
	PRIMARY KEY (namespace, key)
);
