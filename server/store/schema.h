#pragma once
// The versioned schema of ladder.db. Migration i (0-based) moves the database from user_version i to i+1;
// migrations are only ever appended. Every table is written by the coordinator's single writer connection.
#include <string_view>
#include <vector>

namespace ladder::store {

inline const std::vector<std::string_view>& Migrations() {
  static const std::vector<std::string_view> kMigrations = {
      // 1: the foundation.
      R"sql(
CREATE TABLE searches(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  state INTEGER NOT NULL,
  spec_yaml TEXT NOT NULL,
  objective_metric TEXT NOT NULL,
  direction INTEGER NOT NULL,
  max_trials INTEGER NOT NULL,
  parallelism INTEGER NOT NULL,
  nodes INTEGER NOT NULL,
  ranks_per_node INTEGER NOT NULL,
  gpus_per_rank INTEGER NOT NULL,
  created_at REAL NOT NULL,
  finished_at REAL,
  error TEXT NOT NULL DEFAULT '');
CREATE TABLE trials(
  id INTEGER PRIMARY KEY,
  search_id INTEGER NOT NULL REFERENCES searches(id),
  number INTEGER NOT NULL,
  state INTEGER NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER,
  error TEXT NOT NULL DEFAULT '',
  ignored_lines INTEGER NOT NULL DEFAULT 0,
  last_ignored_line TEXT NOT NULL DEFAULT '',
  objective REAL,
  metric_count INTEGER NOT NULL DEFAULT 0,
  command TEXT NOT NULL DEFAULT '[]',
  placement TEXT NOT NULL DEFAULT '',
  assignment_epoch INTEGER NOT NULL DEFAULT 0,
  created_at REAL NOT NULL,
  started_at REAL,
  finished_at REAL,
  UNIQUE(search_id, number));
CREATE TABLE params(
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  name TEXT NOT NULL,
  kind INTEGER NOT NULL,            -- 1 float, 2 int, 3 string
  real_value REAL,
  int_value INTEGER,
  text_value TEXT,
  PRIMARY KEY(trial_id, name)) WITHOUT ROWID;
CREATE TABLE metrics(
  trial_id INTEGER NOT NULL,
  step INTEGER NOT NULL,
  name TEXT NOT NULL,
  value REAL NOT NULL,
  time REAL NOT NULL);
CREATE INDEX metrics_by_trial ON metrics(trial_id, step);
CREATE TABLE nodes(
  id TEXT PRIMARY KEY,
  hostname TEXT NOT NULL,
  cores INTEGER NOT NULL,
  slots INTEGER NOT NULL,
  gpus INTEGER NOT NULL,
  memory_bytes INTEGER NOT NULL,
  labels TEXT NOT NULL,
  state INTEGER NOT NULL,
  epoch INTEGER NOT NULL,
  last_seen REAL NOT NULL);
CREATE TABLE allocations(
  id INTEGER PRIMARY KEY,
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  attempt INTEGER NOT NULL,
  node_id TEXT NOT NULL,
  slots TEXT NOT NULL,
  assignment_epoch INTEGER NOT NULL,
  started_at REAL NOT NULL,
  released_at REAL,
  outcome TEXT);
CREATE INDEX allocations_open ON allocations(trial_id) WHERE released_at IS NULL;
CREATE TABLE events(
  seq INTEGER PRIMARY KEY,
  time REAL NOT NULL,
  kind TEXT NOT NULL,
  search_id INTEGER,
  trial_id INTEGER,
  detail TEXT NOT NULL DEFAULT '');
)sql",
      // 2: why a node is down or quarantined (quarantine outlives a coordinator restart).
      R"sql(
ALTER TABLE nodes ADD COLUMN state_reason TEXT NOT NULL DEFAULT '';
)sql",
      // 3: scheduling class of a search (1 search, 2 promoted, 3 hero), preemptions of a trial, and a
      // search's ensemble (ladder.v1.EnsembleResult as JSON).
      R"sql(
ALTER TABLE searches ADD COLUMN priority INTEGER NOT NULL DEFAULT 1;
ALTER TABLE trials ADD COLUMN preemptions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE searches ADD COLUMN ensemble TEXT;
ALTER TABLE searches ADD COLUMN plan TEXT NOT NULL DEFAULT '';
)sql",
      // 4: a trial's own node count (node count as the fidelity: it grows from stage to stage; 0: the search's).
      R"sql(
ALTER TABLE trials ADD COLUMN group_nodes INTEGER NOT NULL DEFAULT 0;
)sql",
      // 5: what the dashboards show of a trial: its rung (or PBT generation), the end of rank 0's stderr once it
      // exited, and its runs and journal entries looked up by trial.
      R"sql(
ALTER TABLE trials ADD COLUMN rung INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN log_tail TEXT NOT NULL DEFAULT '';
CREATE INDEX allocations_by_trial ON allocations(trial_id);
CREATE INDEX events_by_trial ON events(trial_id) WHERE trial_id IS NOT NULL;
)sql",
      // 6: the Slurm job a search runs in (a hero run submitted with ladder promote --submit).
      R"sql(
ALTER TABLE searches ADD COLUMN slurm_job_id TEXT NOT NULL DEFAULT '';
)sql",
      // 7: access tokens other than <db>.token (ladder tokens create): the SHA-256 of each, never the token.
      R"sql(
CREATE TABLE tokens(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  role INTEGER NOT NULL,            -- ladder.v1.TokenRole
  sha256 TEXT NOT NULL UNIQUE,      -- hex
  created_at REAL NOT NULL,
  revoked_at REAL);
)sql",
      // 8: a token's expiry (ladder tokens create --expires); NULL: valid until revoked.
      R"sql(
ALTER TABLE tokens ADD COLUMN expires_at REAL;
)sql",
      // 9: a probe of the extrapolation's climb (AddProbe): marked, with its gradient-accumulation steps (0: 1).
      R"sql(
ALTER TABLE trials ADD COLUMN probe INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN micro_batches INTEGER NOT NULL DEFAULT 0;
)sql",
      // 10: the ended state (and error) a probe reopened a search from (AddProbe; 0: not reopened), kept until the
      // search ends again, so that a restart in between ends it as it had.
      R"sql(
ALTER TABLE searches ADD COLUMN reopened_state INTEGER NOT NULL DEFAULT 0;
ALTER TABLE searches ADD COLUMN reopened_error TEXT NOT NULL DEFAULT '';
)sql",
      // 11: why a member of a running trial's group was stopped from outside ladder (its Slurm step cancelled, a SIGTERM
      // its worker did not send) while the others ran (TrialRecord::outside_stop; '' none), so that a restart before
      // their exits requeues the trial as that stop, not as their failure.
      R"sql(
ALTER TABLE trials ADD COLUMN outside_stop TEXT NOT NULL DEFAULT '';
)sql",
      // 12: the coordinator's lease on the database (store_lease.cc): one row, the coordinator that writes it (a
      // random id per start, its host and pid), since when, its last heartbeat and the timeout after which another
      // may take it over. What keeps a second coordinator off a database where file locks are node-local.
      R"sql(
CREATE TABLE coordinator_lease(
  id INTEGER PRIMARY KEY CHECK(id = 1),
  holder TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  started_at REAL NOT NULL,
  heartbeat_at REAL NOT NULL,
  timeout_s REAL NOT NULL);
)sql",
      // 13: configurations given by hand to a running search (ladder search enqueue; the spec's enqueue: points are
      // in its spec), each a JSON ladder.v1.StoredPoint, deleted in the batch that creates its trial.
      R"sql(
CREATE TABLE enqueued_points(
  id INTEGER PRIMARY KEY,
  search_id INTEGER NOT NULL REFERENCES searches(id),
  params TEXT NOT NULL,
  created_at REAL NOT NULL);
)sql",
      // 14: a warm-started search's earlier trials (the spec's warm_start:): where they came from and how many were
      // skipped, and each kept one as a JSON ladder.v1.StoredPoint with its objective, told to the sampler again
      // after a restart.
      R"sql(
CREATE TABLE warm_starts(
  search_id INTEGER PRIMARY KEY REFERENCES searches(id),
  source TEXT NOT NULL,
  skipped INTEGER NOT NULL);
CREATE TABLE warm_start_points(
  search_id INTEGER NOT NULL REFERENCES searches(id),
  seq INTEGER NOT NULL,
  point TEXT NOT NULL,
  PRIMARY KEY(search_id, seq)) WITHOUT ROWID;
)sql",
      // 15: a completed trial's value of each of its search's several objectives (the spec's objectives:), a JSON
      // list of numbers in their order ('' with one objective), from which a restart rebuilds the Pareto front.
      R"sql(
ALTER TABLE trials ADD COLUMN objectives TEXT NOT NULL DEFAULT '';
)sql",
      // 16: whether a trial is a known point (the spec's enqueue:, ladder search enqueue), not a sampled one.
      R"sql(
ALTER TABLE trials ADD COLUMN enqueued INTEGER NOT NULL DEFAULT 0;
)sql",
      // 17: a completed trial's signed value of each of its search's constraints (the spec's constraints:), a JSON
      // list of numbers in their order ('' without constraints), from which a restart marks it infeasible again and
      // tells the sampler the same values (store_constraints.cc).
      R"sql(
ALTER TABLE trials ADD COLUMN constraints TEXT NOT NULL DEFAULT '';
)sql",
  };
  return kMigrations;
}

}  // namespace ladder::store
