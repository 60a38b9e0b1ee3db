#include "manager/store/migrations.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>

#include "common/strings.h"
#include "manager/store/sqlite.h"
#include "manager/store/store.h"

namespace picket::manager::store {
namespace {

// Version 1: sensors, bundles and blobs, deployments and targets, the audit log.
constexpr const char* kV1 = R"sql(
CREATE TABLE sensors (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    host TEXT NOT NULL DEFAULT '',
    version TEXT NOT NULL DEFAULT '',
    capture_mode TEXT NOT NULL DEFAULT '',
    workers INTEGER NOT NULL DEFAULT 0,
    token_hash TEXT,
    enrolled_at INTEGER,
    first_seen INTEGER,
    last_seen INTEGER,
    connected INTEGER NOT NULL DEFAULT 0 CHECK (connected IN (0, 1)),
    running_version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE sensor_labels (
    sensor_id INTEGER NOT NULL REFERENCES sensors(id),
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (sensor_id, key)
) WITHOUT ROWID;

CREATE TABLE blobs (
    sha256 TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE bundles (
    version INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE REFERENCES blobs(sha256),
    author TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    parent_version INTEGER REFERENCES bundles(version)
);
CREATE TRIGGER bundles_immutable BEFORE UPDATE ON bundles
BEGIN SELECT RAISE(ABORT, 'bundles are immutable'); END;
CREATE TRIGGER bundles_kept BEFORE DELETE ON bundles
BEGIN SELECT RAISE(ABORT, 'bundles are never deleted'); END;
CREATE TRIGGER blobs_immutable BEFORE UPDATE ON blobs
BEGIN SELECT RAISE(ABORT, 'blobs are immutable'); END;
CREATE TRIGGER blobs_kept BEFORE DELETE ON blobs
BEGIN SELECT RAISE(ABORT, 'blobs are never deleted'); END;

CREATE TABLE deployments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    bundle_version INTEGER REFERENCES bundles(version),
    kind TEXT NOT NULL CHECK (kind IN ('deploy', 'rollback')),
    selector TEXT NOT NULL,
    canary_percent INTEGER NOT NULL DEFAULT 0 CHECK (canary_percent BETWEEN 0 AND 100),
    soak_seconds INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL CHECK (state IN ('canary', 'soaking', 'rolling', 'completed', 'failed',
                                         'rolled_back')),
    parent_id INTEGER REFERENCES deployments(id),
    actor TEXT NOT NULL DEFAULT '',
    error TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE deployment_targets (
    deployment_id INTEGER NOT NULL REFERENCES deployments(id),
    sensor_id INTEGER NOT NULL REFERENCES sensors(id),
    bundle_version INTEGER NOT NULL REFERENCES bundles(version),
    stage TEXT NOT NULL CHECK (stage IN ('canary', 'rest')),
    state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'applied', 'rejected', 'timed_out',
                                         'superseded')),
    error TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    sent_at INTEGER,
    finished_at INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (deployment_id, sensor_id)
);
CREATE INDEX deployment_targets_by_sensor ON deployment_targets(sensor_id, state);

CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts INTEGER NOT NULL,
    actor TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    sensor TEXT NOT NULL DEFAULT '',
    bundle_version INTEGER NOT NULL DEFAULT 0,
    deployment_id INTEGER NOT NULL DEFAULT 0,
    message TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_by_sensor ON events(sensor, id);
CREATE INDEX events_by_deployment ON events(deployment_id, id);
)sql";

// Version 2: run history (one row per period a sensor ran one bundle) and per-minute metrics.
constexpr const char* kV2 = R"sql(
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sensor_id INTEGER NOT NULL REFERENCES sensors(id),
    bundle_version INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at INTEGER,
    packets INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL DEFAULT 0,
    drops INTEGER NOT NULL DEFAULT 0,
    alerts INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX runs_open ON runs(sensor_id) WHERE ended_at IS NULL;
CREATE INDEX runs_by_sensor ON runs(sensor_id, id);

CREATE TABLE metric_names (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE metric_minutes (
    sensor_id INTEGER NOT NULL REFERENCES sensors(id),
    name_id INTEGER NOT NULL REFERENCES metric_names(id),
    minute INTEGER NOT NULL,
    value INTEGER NOT NULL,
    sample_ts INTEGER NOT NULL,
    PRIMARY KEY (sensor_id, name_id, minute)
) WITHOUT ROWID;
CREATE INDEX metric_minutes_by_minute ON metric_minutes(minute);
)sql";

// Version 3: revocation. A revoked sensor (revoked_at set) is refused whatever credentials it
// presents; cert_sha256 is the client certificate it last connected with, copied to
// revoked_certs when it is revoked so that certificate stays refused after a re-enrollment.
constexpr const char* kV3 = R"sql(
ALTER TABLE sensors ADD COLUMN revoked_at INTEGER;
ALTER TABLE sensors ADD COLUMN cert_sha256 TEXT;
CREATE TABLE revoked_certs (
    sha256 TEXT PRIMARY KEY,
    sensor_id INTEGER NOT NULL REFERENCES sensors(id),
    revoked_at INTEGER NOT NULL
) WITHOUT ROWID;
)sql";

// Version 4: rule sources, the update's policy files and the history of updates; a
// deployment's health gate (NULL = the manager's defaults), kept so that it survives a restart;
// the deployment that began each run (NULL: start-up, a local reload).
constexpr const char* kV4 = R"sql(
ALTER TABLE deployments ADD COLUMN gate_max_drop_ratio REAL;
ALTER TABLE deployments ADD COLUMN gate_max_alert_rate REAL;
ALTER TABLE runs ADD COLUMN deployment_id INTEGER REFERENCES deployments(id);
CREATE TABLE rule_sources (
    name TEXT PRIMARY KEY,
    location TEXT NOT NULL,
    headers TEXT NOT NULL DEFAULT '',
    checksum_url TEXT NOT NULL DEFAULT '',
    enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at INTEGER NOT NULL,
    etag TEXT NOT NULL DEFAULT '',
    last_modified TEXT NOT NULL DEFAULT '',
    sha256 TEXT NOT NULL DEFAULT '',
    fetched_at INTEGER NOT NULL DEFAULT 0,
    rules INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE TABLE rule_policy (
    name TEXT PRIMARY KEY,
    content TEXT NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE rule_updates (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    trigger TEXT NOT NULL,
    result TEXT NOT NULL CHECK (result IN ('new_version', 'unchanged', 'failed')),
    message TEXT NOT NULL DEFAULT '',
    version INTEGER REFERENCES bundles(version)
);
CREATE TABLE rule_update_sources (
    update_id INTEGER NOT NULL REFERENCES rule_updates(id),
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL DEFAULT '',
    etag TEXT NOT NULL DEFAULT '',
    not_modified INTEGER NOT NULL DEFAULT 0,
    files INTEGER NOT NULL DEFAULT 0,
    rules INTEGER NOT NULL DEFAULT 0,
    rules_enabled INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (update_id, name)
) WITHOUT ROWID;
)sql";

// Version 5: bootstrap enrollment. A token is stored as its public id and the SHA-256 of its
// secret; its labels are imposed on the sensors it enrolls (sensor_imposed_labels, applied over
// Hello's labels at every connect); every certificate the manager signs is recorded, so that
// revoking a sensor revokes all of them, including those never presented yet. A token enrolls
// new names only: an existing sensor may enroll again once readmitted (may_enroll = 1, set by
// readmit, cleared by the enrollment), so a token holder cannot take over a sensor in use.
constexpr const char* kV5 = R"sql(
ALTER TABLE sensors ADD COLUMN may_enroll INTEGER NOT NULL DEFAULT 0;
CREATE TABLE bootstrap_tokens (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    uses INTEGER NOT NULL CHECK (uses > 0),
    used INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0 AND used <= uses),
    expires_at INTEGER NOT NULL,
    name_pattern TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL DEFAULT '',
    revoked_at INTEGER
) WITHOUT ROWID;
CREATE TABLE bootstrap_token_labels (
    token_id TEXT NOT NULL REFERENCES bootstrap_tokens(id),
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (token_id, key)
) WITHOUT ROWID;
CREATE TABLE sensor_imposed_labels (
    sensor_id INTEGER NOT NULL REFERENCES sensors(id),
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (sensor_id, key)
) WITHOUT ROWID;
CREATE TABLE issued_certs (
    serial TEXT PRIMARY KEY,
    sensor_id INTEGER NOT NULL REFERENCES sensors(id),
    sha256 TEXT NOT NULL,
    not_after INTEGER NOT NULL,
    issued_at INTEGER NOT NULL,
    token_id TEXT
) WITHOUT ROWID;
CREATE INDEX issued_certs_by_sensor ON issued_certs(sensor_id);
)sql";

// Version 6: a deployment that a newer one took over ends 'superseded', a state of its own.
// SQLite cannot alter a CHECK constraint: the table is rebuilt (migrate() runs every step with
// foreign keys off and checks them before it commits, as SQLite's ALTER TABLE guide says).
constexpr const char* kV6 = R"sql(
CREATE TABLE deployments_v6 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    bundle_version INTEGER REFERENCES bundles(version),
    kind TEXT NOT NULL CHECK (kind IN ('deploy', 'rollback')),
    selector TEXT NOT NULL,
    canary_percent INTEGER NOT NULL DEFAULT 0 CHECK (canary_percent BETWEEN 0 AND 100),
    soak_seconds INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL CHECK (state IN ('canary', 'soaking', 'rolling', 'completed', 'failed',
                                         'rolled_back', 'superseded')),
    parent_id INTEGER REFERENCES deployments(id),
    actor TEXT NOT NULL DEFAULT '',
    error TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    gate_max_drop_ratio REAL,
    gate_max_alert_rate REAL
);
INSERT INTO deployments_v6(id, bundle_version, kind, selector, canary_percent, soak_seconds,
                           state, parent_id, actor, error, created_at, updated_at,
                           gate_max_drop_ratio, gate_max_alert_rate)
    SELECT id, bundle_version, kind, selector, canary_percent, soak_seconds, state, parent_id,
           actor, error, created_at, updated_at, gate_max_drop_ratio, gate_max_alert_rate
    FROM deployments;
DROP TABLE deployments;
ALTER TABLE deployments_v6 RENAME TO deployments;
)sql";

// Version 7: bounded work per target event at any fleet size. Each deployment keeps its target
// counts by state (targets_taken_over: superseded by a newer deployment, error
// "superseded by deployment N"), maintained by triggers on every insert, update and delete of a
// target, so that finishing a deployment (maybe_finish) and the rollout's pass read one row
// instead of counting K targets per event. Indexes for the rollout's per-deployment reads
// (sent targets by age, canary targets) and for the open deployments.
constexpr const char* kV7 = R"sql(
ALTER TABLE deployments ADD COLUMN targets_pending INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_sent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_applied INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_rejected INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_timed_out INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_superseded INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_taken_over INTEGER NOT NULL DEFAULT 0;
UPDATE deployments SET
    targets_pending =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'pending'),
    targets_sent =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'sent'),
    targets_applied =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'applied'),
    targets_rejected =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'rejected'),
    targets_timed_out =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'timed_out'),
    targets_superseded =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'superseded'),
    targets_taken_over =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'superseded' AND substr(t.error, 1, 25) = 'superseded by deployment ');
CREATE TRIGGER deployment_targets_count_insert AFTER INSERT ON deployment_targets
BEGIN
    UPDATE deployments SET
        targets_pending = targets_pending + (NEW.state = 'pending'),
        targets_sent = targets_sent + (NEW.state = 'sent'),
        targets_applied = targets_applied + (NEW.state = 'applied'),
        targets_rejected = targets_rejected + (NEW.state = 'rejected'),
        targets_timed_out = targets_timed_out + (NEW.state = 'timed_out'),
        targets_superseded = targets_superseded + (NEW.state = 'superseded'),
        targets_taken_over = targets_taken_over
            + (NEW.state = 'superseded' AND substr(NEW.error, 1, 25) = 'superseded by deployment ')
    WHERE id = NEW.deployment_id;
END;
CREATE TRIGGER deployment_targets_count_delete AFTER DELETE ON deployment_targets
BEGIN
    UPDATE deployments SET
        targets_pending = targets_pending - (OLD.state = 'pending'),
        targets_sent = targets_sent - (OLD.state = 'sent'),
        targets_applied = targets_applied - (OLD.state = 'applied'),
        targets_rejected = targets_rejected - (OLD.state = 'rejected'),
        targets_timed_out = targets_timed_out - (OLD.state = 'timed_out'),
        targets_superseded = targets_superseded - (OLD.state = 'superseded'),
        targets_taken_over = targets_taken_over
            - (OLD.state = 'superseded' AND substr(OLD.error, 1, 25) = 'superseded by deployment ')
    WHERE id = OLD.deployment_id;
END;
CREATE TRIGGER deployment_targets_count_update AFTER UPDATE OF deployment_id, state, error
ON deployment_targets WHEN OLD.deployment_id = NEW.deployment_id
BEGIN
    UPDATE deployments SET
        targets_pending = targets_pending + (NEW.state = 'pending') - (OLD.state = 'pending'),
        targets_sent = targets_sent + (NEW.state = 'sent') - (OLD.state = 'sent'),
        targets_applied = targets_applied + (NEW.state = 'applied') - (OLD.state = 'applied'),
        targets_rejected = targets_rejected + (NEW.state = 'rejected') - (OLD.state = 'rejected'),
        targets_timed_out = targets_timed_out
            + (NEW.state = 'timed_out')
            - (OLD.state = 'timed_out'),
        targets_superseded = targets_superseded
            + (NEW.state = 'superseded')
            - (OLD.state = 'superseded'),
        targets_taken_over = targets_taken_over
            + (NEW.state = 'superseded' AND substr(NEW.error, 1, 25) = 'superseded by deployment ')
            - (OLD.state = 'superseded' AND substr(OLD.error, 1, 25) = 'superseded by deployment ')
    WHERE id = NEW.deployment_id;
END;
CREATE TRIGGER deployment_targets_count_move AFTER UPDATE OF deployment_id ON deployment_targets
WHEN OLD.deployment_id != NEW.deployment_id
BEGIN
    UPDATE deployments SET
        targets_pending = targets_pending - (OLD.state = 'pending'),
        targets_sent = targets_sent - (OLD.state = 'sent'),
        targets_applied = targets_applied - (OLD.state = 'applied'),
        targets_rejected = targets_rejected - (OLD.state = 'rejected'),
        targets_timed_out = targets_timed_out - (OLD.state = 'timed_out'),
        targets_superseded = targets_superseded - (OLD.state = 'superseded'),
        targets_taken_over = targets_taken_over
            - (OLD.state = 'superseded' AND substr(OLD.error, 1, 25) = 'superseded by deployment ')
    WHERE id = OLD.deployment_id;
    UPDATE deployments SET
        targets_pending = targets_pending + (NEW.state = 'pending'),
        targets_sent = targets_sent + (NEW.state = 'sent'),
        targets_applied = targets_applied + (NEW.state = 'applied'),
        targets_rejected = targets_rejected + (NEW.state = 'rejected'),
        targets_timed_out = targets_timed_out + (NEW.state = 'timed_out'),
        targets_superseded = targets_superseded + (NEW.state = 'superseded'),
        targets_taken_over = targets_taken_over
            + (NEW.state = 'superseded' AND substr(NEW.error, 1, 25) = 'superseded by deployment ')
    WHERE id = NEW.deployment_id;
END;
CREATE INDEX deployment_targets_by_state ON deployment_targets(deployment_id, state, sent_at);
CREATE INDEX deployment_targets_by_stage ON deployment_targets(deployment_id, stage);
CREATE INDEX deployments_by_state ON deployments(state);
)sql";
// The triggers above spell the prefix out (SQL cannot see C++ constants).
static_assert(kSupersededByPrefix == "superseded by deployment " &&
              kSupersededByPrefix.size() == 25);

// Version 8: where a sensor process's reports stand, written in the transaction that stores a
// report (runs.cc): its boot id and last stored seq (a report at or below it is a duplicate,
// ignored: failover between managers on one database), and the cumulative counters of that
// report (the base of the next one's run totals, whichever manager stores it). Plain DDL that
// SQLite and PostgreSQL both accept.
constexpr const char* kV8 = R"sql(
ALTER TABLE sensors ADD COLUMN report_boot TEXT NOT NULL DEFAULT '';
ALTER TABLE sensors ADD COLUMN report_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sensors ADD COLUMN report_packets INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sensors ADD COLUMN report_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sensors ADD COLUMN report_drops INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sensors ADD COLUMN report_alerts INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 9 changes PostgreSQL's counters triggers only (below); SQLite's row triggers stay.
constexpr const char* kV9 = "SELECT 1;";

// The same steps in PostgreSQL's dialect, step for step (one numbered list for both backends:
// a migration appended later needs both texts). BIGINT for INTEGER (timestamps are int64 ns),
// identity columns for INTEGER PRIMARY KEY [AUTOINCREMENT] (never reused either), BYTEA for
// BLOB, DOUBLE PRECISION for REAL, TEXT COLLATE "C" so that names sort and compare bytewise as
// in SQLite whatever the database's locale, PL/pgSQL functions for the triggers; v6 alters the
// CHECK constraint in place (no rebuild needed).
constexpr const char* kPgV1 = R"sql(
CREATE TABLE sensors (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE,
    host TEXT COLLATE "C" NOT NULL DEFAULT '',
    version TEXT COLLATE "C" NOT NULL DEFAULT '',
    capture_mode TEXT COLLATE "C" NOT NULL DEFAULT '',
    workers BIGINT NOT NULL DEFAULT 0,
    token_hash TEXT COLLATE "C",
    enrolled_at BIGINT,
    first_seen BIGINT,
    last_seen BIGINT,
    connected BIGINT NOT NULL DEFAULT 0 CHECK (connected IN (0, 1)),
    running_version BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE sensor_labels (
    sensor_id BIGINT NOT NULL REFERENCES sensors(id),
    key TEXT COLLATE "C" NOT NULL,
    value TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (sensor_id, key)
);

CREATE TABLE blobs (
    sha256 TEXT COLLATE "C" PRIMARY KEY,
    size BIGINT NOT NULL,
    data BYTEA NOT NULL
);
CREATE TABLE bundles (
    version BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL,
    sha256 TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES blobs(sha256),
    author TEXT COLLATE "C" NOT NULL DEFAULT '',
    message TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    parent_version BIGINT REFERENCES bundles(version)
);
CREATE FUNCTION picket_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION '%', TG_ARGV[0]; END $$;
-- A blob changes only to be repaired: rewritten with content that hashes to its address.
CREATE FUNCTION picket_blob_repair_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.sha256 = OLD.sha256 AND encode(sha256(NEW.data), 'hex') = NEW.sha256 THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'blobs are immutable';
END $$;
CREATE TRIGGER bundles_immutable BEFORE UPDATE ON bundles
FOR EACH ROW EXECUTE FUNCTION picket_refuse('bundles are immutable');
CREATE TRIGGER bundles_kept BEFORE DELETE ON bundles
FOR EACH ROW EXECUTE FUNCTION picket_refuse('bundles are never deleted');
CREATE TRIGGER blobs_immutable BEFORE UPDATE ON blobs
FOR EACH ROW EXECUTE FUNCTION picket_blob_repair_only();
CREATE TRIGGER blobs_kept BEFORE DELETE ON blobs
FOR EACH ROW EXECUTE FUNCTION picket_refuse('blobs are never deleted');

CREATE TABLE deployments (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    bundle_version BIGINT REFERENCES bundles(version),
    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('deploy', 'rollback')),
    selector TEXT COLLATE "C" NOT NULL,
    canary_percent BIGINT NOT NULL DEFAULT 0 CHECK (canary_percent BETWEEN 0 AND 100),
    soak_seconds BIGINT NOT NULL DEFAULT 0,
    state TEXT COLLATE "C" NOT NULL CHECK (state IN ('canary', 'soaking', 'rolling', 'completed', 'failed',
                                         'rolled_back')),
    parent_id BIGINT REFERENCES deployments(id),
    actor TEXT COLLATE "C" NOT NULL DEFAULT '',
    error TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE deployment_targets (
    deployment_id BIGINT NOT NULL REFERENCES deployments(id),
    sensor_id BIGINT NOT NULL REFERENCES sensors(id),
    bundle_version BIGINT NOT NULL REFERENCES bundles(version),
    stage TEXT COLLATE "C" NOT NULL CHECK (stage IN ('canary', 'rest')),
    state TEXT COLLATE "C" NOT NULL CHECK (state IN ('pending', 'sent', 'applied', 'rejected', 'timed_out',
                                         'superseded')),
    error TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    sent_at BIGINT,
    finished_at BIGINT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (deployment_id, sensor_id)
);
CREATE INDEX deployment_targets_by_sensor ON deployment_targets(sensor_id, state);

CREATE TABLE events (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    ts BIGINT NOT NULL,
    actor TEXT COLLATE "C" NOT NULL DEFAULT '',
    kind TEXT COLLATE "C" NOT NULL,
    sensor TEXT COLLATE "C" NOT NULL DEFAULT '',
    bundle_version BIGINT NOT NULL DEFAULT 0,
    deployment_id BIGINT NOT NULL DEFAULT 0,
    message TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX events_by_sensor ON events(sensor, id);
CREATE INDEX events_by_deployment ON events(deployment_id, id);

)sql";

constexpr const char* kPgV2 = R"sql(
CREATE TABLE runs (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    sensor_id BIGINT NOT NULL REFERENCES sensors(id),
    bundle_version BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    ended_at BIGINT,
    packets BIGINT NOT NULL DEFAULT 0,
    bytes BIGINT NOT NULL DEFAULT 0,
    drops BIGINT NOT NULL DEFAULT 0,
    alerts BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX runs_open ON runs(sensor_id) WHERE ended_at IS NULL;
CREATE INDEX runs_by_sensor ON runs(sensor_id, id);

CREATE TABLE metric_names (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE
);
CREATE TABLE metric_minutes (
    sensor_id BIGINT NOT NULL REFERENCES sensors(id),
    name_id BIGINT NOT NULL REFERENCES metric_names(id),
    minute BIGINT NOT NULL,
    value BIGINT NOT NULL,
    sample_ts BIGINT NOT NULL,
    PRIMARY KEY (sensor_id, name_id, minute)
);
CREATE INDEX metric_minutes_by_minute ON metric_minutes(minute);

)sql";

constexpr const char* kPgV3 = R"sql(
ALTER TABLE sensors ADD COLUMN revoked_at BIGINT;
ALTER TABLE sensors ADD COLUMN cert_sha256 TEXT COLLATE "C";
CREATE TABLE revoked_certs (
    sha256 TEXT COLLATE "C" PRIMARY KEY,
    sensor_id BIGINT NOT NULL REFERENCES sensors(id),
    revoked_at BIGINT NOT NULL
);

)sql";

constexpr const char* kPgV4 = R"sql(
ALTER TABLE deployments ADD COLUMN gate_max_drop_ratio DOUBLE PRECISION;
ALTER TABLE deployments ADD COLUMN gate_max_alert_rate DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN deployment_id BIGINT REFERENCES deployments(id);
CREATE TABLE rule_sources (
    name TEXT COLLATE "C" PRIMARY KEY,
    location TEXT COLLATE "C" NOT NULL,
    headers TEXT COLLATE "C" NOT NULL DEFAULT '',
    checksum_url TEXT COLLATE "C" NOT NULL DEFAULT '',
    enabled BIGINT NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at BIGINT NOT NULL,
    etag TEXT COLLATE "C" NOT NULL DEFAULT '',
    last_modified TEXT COLLATE "C" NOT NULL DEFAULT '',
    sha256 TEXT COLLATE "C" NOT NULL DEFAULT '',
    fetched_at BIGINT NOT NULL DEFAULT 0,
    rules BIGINT NOT NULL DEFAULT 0,
    last_error TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE TABLE rule_policy (
    name TEXT COLLATE "C" PRIMARY KEY,
    content TEXT COLLATE "C" NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE rule_updates (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    started_at BIGINT NOT NULL,
    finished_at BIGINT NOT NULL,
    trigger TEXT COLLATE "C" NOT NULL,
    result TEXT COLLATE "C" NOT NULL CHECK (result IN ('new_version', 'unchanged', 'failed')),
    message TEXT COLLATE "C" NOT NULL DEFAULT '',
    version BIGINT REFERENCES bundles(version)
);
CREATE TABLE rule_update_sources (
    update_id BIGINT NOT NULL REFERENCES rule_updates(id),
    name TEXT COLLATE "C" NOT NULL,
    sha256 TEXT COLLATE "C" NOT NULL DEFAULT '',
    etag TEXT COLLATE "C" NOT NULL DEFAULT '',
    not_modified BIGINT NOT NULL DEFAULT 0,
    files BIGINT NOT NULL DEFAULT 0,
    rules BIGINT NOT NULL DEFAULT 0,
    rules_enabled BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (update_id, name)
);

)sql";

constexpr const char* kPgV5 = R"sql(
ALTER TABLE sensors ADD COLUMN may_enroll BIGINT NOT NULL DEFAULT 0;
CREATE TABLE bootstrap_tokens (
    id TEXT COLLATE "C" PRIMARY KEY,
    secret_hash TEXT COLLATE "C" NOT NULL,
    uses BIGINT NOT NULL CHECK (uses > 0),
    used BIGINT NOT NULL DEFAULT 0 CHECK (used >= 0 AND used <= uses),
    expires_at BIGINT NOT NULL,
    name_pattern TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    created_by TEXT COLLATE "C" NOT NULL DEFAULT '',
    revoked_at BIGINT
);
CREATE TABLE bootstrap_token_labels (
    token_id TEXT COLLATE "C" NOT NULL REFERENCES bootstrap_tokens(id),
    key TEXT COLLATE "C" NOT NULL,
    value TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (token_id, key)
);
CREATE TABLE sensor_imposed_labels (
    sensor_id BIGINT NOT NULL REFERENCES sensors(id),
    key TEXT COLLATE "C" NOT NULL,
    value TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (sensor_id, key)
);
CREATE TABLE issued_certs (
    serial TEXT COLLATE "C" PRIMARY KEY,
    sensor_id BIGINT NOT NULL REFERENCES sensors(id),
    sha256 TEXT COLLATE "C" NOT NULL,
    not_after BIGINT NOT NULL,
    issued_at BIGINT NOT NULL,
    token_id TEXT COLLATE "C"
);
CREATE INDEX issued_certs_by_sensor ON issued_certs(sensor_id);

)sql";

constexpr const char* kPgV6 = R"sql(
ALTER TABLE deployments DROP CONSTRAINT deployments_state_check;
ALTER TABLE deployments ADD CONSTRAINT deployments_state_check
    CHECK (state IN ('canary', 'soaking', 'rolling', 'completed', 'failed', 'rolled_back',
                     'superseded'));
)sql";

constexpr const char* kPgV7 = R"sql(
ALTER TABLE deployments ADD COLUMN targets_pending BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_sent BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_applied BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_rejected BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_timed_out BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_superseded BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN targets_taken_over BIGINT NOT NULL DEFAULT 0;
UPDATE deployments SET
    targets_pending =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'pending'),
    targets_sent =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'sent'),
    targets_applied =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'applied'),
    targets_rejected =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'rejected'),
    targets_timed_out =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'timed_out'),
    targets_superseded =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'superseded'),
    targets_taken_over =
        (SELECT count(*) FROM deployment_targets t WHERE t.deployment_id = deployments.id
            AND t.state = 'superseded' AND substr(t.error, 1, 25) = 'superseded by deployment ');
CREATE FUNCTION deployment_targets_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE deployments SET
            targets_pending = targets_pending - (OLD.state = 'pending')::int,
            targets_sent = targets_sent - (OLD.state = 'sent')::int,
            targets_applied = targets_applied - (OLD.state = 'applied')::int,
            targets_rejected = targets_rejected - (OLD.state = 'rejected')::int,
            targets_timed_out = targets_timed_out - (OLD.state = 'timed_out')::int,
            targets_superseded = targets_superseded - (OLD.state = 'superseded')::int,
            targets_taken_over = targets_taken_over
                - (OLD.state = 'superseded'
                   AND substr(OLD.error, 1, 25) = 'superseded by deployment ')::int
        WHERE id = OLD.deployment_id;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        UPDATE deployments SET
            targets_pending = targets_pending + (NEW.state = 'pending')::int,
            targets_sent = targets_sent + (NEW.state = 'sent')::int,
            targets_applied = targets_applied + (NEW.state = 'applied')::int,
            targets_rejected = targets_rejected + (NEW.state = 'rejected')::int,
            targets_timed_out = targets_timed_out + (NEW.state = 'timed_out')::int,
            targets_superseded = targets_superseded + (NEW.state = 'superseded')::int,
            targets_taken_over = targets_taken_over
                + (NEW.state = 'superseded'
                   AND substr(NEW.error, 1, 25) = 'superseded by deployment ')::int
        WHERE id = NEW.deployment_id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER deployment_targets_count
AFTER INSERT OR DELETE OR UPDATE OF deployment_id, state, error ON deployment_targets
FOR EACH ROW EXECUTE FUNCTION deployment_targets_count();
CREATE INDEX deployment_targets_by_state ON deployment_targets(deployment_id, state, sent_at);
CREATE INDEX deployment_targets_by_stage ON deployment_targets(deployment_id, stage);
CREATE INDEX deployments_by_state ON deployments(state);
)sql";

// One statement trigger function: the deployments' counters moved by the per-deployment sums
// of `moved`, a query of (deployment_id, n: +1 a row in, -1 a row out, state, error) over the
// statement's transition tables.
std::string pg_count_function(const char* name, const char* moved) {
    return strings::cat("CREATE FUNCTION ", name,
                        R"sql(() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH moved AS ()sql",
                        moved, R"sql(), delta AS (
        SELECT deployment_id,
            sum(n * (state = 'pending')::int) AS pending,
            sum(n * (state = 'sent')::int) AS sent,
            sum(n * (state = 'applied')::int) AS applied,
            sum(n * (state = 'rejected')::int) AS rejected,
            sum(n * (state = 'timed_out')::int) AS timed_out,
            sum(n * (state = 'superseded')::int) AS superseded,
            sum(n * (state = 'superseded'
                     AND substr(error, 1, 25) = 'superseded by deployment ')::int) AS taken_over
        FROM moved GROUP BY deployment_id
    )
    UPDATE deployments d SET
        targets_pending = targets_pending + delta.pending,
        targets_sent = targets_sent + delta.sent,
        targets_applied = targets_applied + delta.applied,
        targets_rejected = targets_rejected + delta.rejected,
        targets_timed_out = targets_timed_out + delta.timed_out,
        targets_superseded = targets_superseded + delta.superseded,
        targets_taken_over = targets_taken_over + delta.taken_over
    FROM delta
    WHERE d.id = delta.deployment_id
        AND (delta.pending, delta.sent, delta.applied, delta.rejected, delta.timed_out,
             delta.superseded, delta.taken_over) <> (0, 0, 0, 0, 0, 0, 0);
    RETURN NULL;
END $$;
)sql");
}

constexpr const char* kNewTargets =
    "SELECT deployment_id, 1 AS n, state, error FROM picket_new_targets";
constexpr const char* kOldTargets =
    "SELECT deployment_id, -1 AS n, state, error FROM picket_old_targets";

// Version 9 in PostgreSQL: the deployments' target counters kept by statement triggers over
// the statement's transition tables, one UPDATE of each deployment a statement touches. The
// row trigger updated the deployment's row once per target: a deploy to 20,000 sensors
// updated one row 20,000 times in its transaction, each finding the newest of the row's
// versions along a chain as long as the updates before it (7 s to insert 20,000 targets,
// 18 s to supersede them).
const std::string kPgV9 = strings::cat(
    "DROP TRIGGER deployment_targets_count ON deployment_targets;\n"
    "DROP FUNCTION deployment_targets_count();\n",
    pg_count_function("deployment_targets_count_inserted", kNewTargets),
    pg_count_function("deployment_targets_count_updated",
                      strings::cat(kNewTargets, " UNION ALL ", kOldTargets).c_str()),
    pg_count_function("deployment_targets_count_deleted", kOldTargets), R"sql(
CREATE TRIGGER deployment_targets_count_insert AFTER INSERT ON deployment_targets
REFERENCING NEW TABLE AS picket_new_targets
FOR EACH STATEMENT EXECUTE FUNCTION deployment_targets_count_inserted();
CREATE TRIGGER deployment_targets_count_update AFTER UPDATE ON deployment_targets
REFERENCING OLD TABLE AS picket_old_targets NEW TABLE AS picket_new_targets
FOR EACH STATEMENT EXECUTE FUNCTION deployment_targets_count_updated();
CREATE TRIGGER deployment_targets_count_delete AFTER DELETE ON deployment_targets
REFERENCING OLD TABLE AS picket_old_targets
FOR EACH STATEMENT EXECUTE FUNCTION deployment_targets_count_deleted();
)sql");

struct Migration {
    const char* sqlite;
    const char* postgres;
};

// Version 8 in PostgreSQL: the same columns, 64-bit (its INTEGER is 32-bit).
constexpr const char* kPgV8 = R"sql(
ALTER TABLE sensors ADD COLUMN report_boot TEXT NOT NULL DEFAULT '';
ALTER TABLE sensors ADD COLUMN report_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sensors ADD COLUMN report_packets BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sensors ADD COLUMN report_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sensors ADD COLUMN report_drops BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sensors ADD COLUMN report_alerts BIGINT NOT NULL DEFAULT 0;
)sql";

const Migration kMigrations[] = {{kV1, kPgV1}, {kV2, kPgV2}, {kV3, kPgV3},
                                 {kV4, kPgV4}, {kV5, kPgV5}, {kV6, kPgV6},
                                 {kV7, kPgV7}, {kV8, kPgV8}, {kV9, kPgV9.c_str()}};

constexpr const char* kSqliteMigrations[] = {kV1, kV2, kV3, kV4, kV5, kV6, kV7, kV8, kV9};
static_assert(std::size(kSqliteMigrations) == std::size(kMigrations));

}  // namespace

std::span<const char* const> migrations() {
    return kSqliteMigrations;
}

const char* postgres_migration(int version) {
    return kMigrations[version - 1].postgres;
}

absl::StatusOr<int> migrate(Conn& c, int target) {
    using strings::cat;
    RETURN_IF_ERROR(c.exec("BEGIN IMMEDIATE"));
    auto fail = [&c](absl::Status st) {
        c.exec("ROLLBACK").IgnoreError();
        return st;
    };
    if (c.postgres()) {
        // Managers starting together on an empty database: CREATE TABLE IF NOT EXISTS is not
        // atomic in PostgreSQL (the later one fails on the catalog's unique index), so they
        // take turns, per schema, until this transaction ends.
        if (absl::Status st = c.exec("SELECT pg_advisory_xact_lock(hashtext('picket.schema.' || "
                                     "current_schema()))");
            !st.ok()) {
            return fail(st);
        }
    }
    if (absl::Status st =
            c.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
        !st.ok()) {
        return fail(st);
    }
    int version = 0;
    {
        auto s = c.prepare("SELECT max(version) FROM schema_version");
        if (!s.ok()) {
            return fail(s.status());
        }
        auto row = s->step();
        if (!row.ok()) {
            return fail(row.status());
        }
        version = *row && !s->null(0) ? static_cast<int>(s->i64(0)) : 0;
    }
    if (version > Store::kSchemaVersion) {
        return fail(absl::FailedPreconditionError(cat(
            "database schema version ", version, " is newer than this picket-manager supports (",
            Store::kSchemaVersion, "); upgrade picket-manager or restore an older database")));
    }
    RETURN_IF_ERROR(c.exec("COMMIT"));
    if (version >= target) {
        return version;
    }
    // SQLite: foreign keys off while tables are rebuilt (a no-op inside a transaction, so
    // here), each step checked before it commits, and on again whatever happens. PostgreSQL
    // checks foreign keys at every statement and alters tables in place: nothing to switch.
    const bool pg = c.postgres();
    if (!pg) {
        RETURN_IF_ERROR(c.exec("PRAGMA foreign_keys=OFF"));
    }
    struct KeysOn {
        Conn& c;
        ~KeysOn() {
            if (!c.postgres()) {
                c.exec("PRAGMA foreign_keys=ON").IgnoreError();
            }
        }
    } keys_on{c};
    auto steps = migrations();
    for (int v = version + 1; v <= target; ++v) {
        RETURN_IF_ERROR(c.exec("BEGIN IMMEDIATE"));
        absl::Status st;
        if (pg) {
            // Two managers starting together on one database: the second waits here, then
            // finds the step applied (its version re-read under the lock) and stops.
            st = c.exec("LOCK TABLE schema_version IN EXCLUSIVE MODE");
            if (st.ok()) {
                auto now =
                    c.query_i64("SELECT max(version) FROM schema_version WHERE version >= ?", v);
                if (now.ok() && *now && **now >= v) {
                    RETURN_IF_ERROR(c.exec("COMMIT"));
                    version = static_cast<int>(**now);
                    continue;
                }
                st = now.ok() ? c.exec(postgres_migration(v)) : now.status();
            }
        } else {
            st = c.exec(steps[v - 1]);
        }
        if (!pg && st.ok()) {
            auto s = c.prepare("PRAGMA foreign_key_check");
            auto row = s.ok() ? s->step() : absl::StatusOr<bool>(s.status());
            if (!row.ok()) {
                st = row.status();
            } else if (*row) {
                st =
                    absl::FailedPreconditionError(cat("table ", s->text(0), " row ", s->i64(1),
                                                      " refers to a missing ", s->text(2), " row"));
            }
        }
        if (st.ok()) {
            auto s = c.prepare("DELETE FROM schema_version");
            st = s.ok() ? s->run() : s.status();
        }
        if (st.ok()) {
            auto s = c.prepare("INSERT INTO schema_version(version) VALUES(?)");
            st = s.ok() ? s->bind(1, v).run() : s.status();
        }
        if (st.ok()) {
            st = c.exec("COMMIT");
        }
        if (!st.ok()) {
            c.exec("ROLLBACK").IgnoreError();
            return absl::Status(st.code(),
                                cat("schema migration to version ", v, ": ", st.message()));
        }
    }
    return std::max(version, target);
}

}  // namespace picket::manager::store
