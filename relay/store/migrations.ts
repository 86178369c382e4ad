import { LATER_MIGRATIONS } from "./migrations-later.js";

/**
 * Versioned schema migrations: one history for SQLite and PostgreSQL. Each entry runs once, in order, inside
 * a transaction (SQLite records how far a database has come in `PRAGMA user_version`, PostgreSQL in the
 * `makina_schema` table). The SQL is the part both databases read alike: TEXT, INTEGER, BIGINT for times and
 * counters (ms since the epoch do not fit PostgreSQL's INTEGER; SQLite gives BIGINT the same integer
 * affinity as INTEGER, so databases made before BIGINT was written here read and compare the same),
 * CHECK, REFERENCES, ADD COLUMN; `{{WITHOUT_ROWID}}` is SQLite's clustered table and nothing on PostgreSQL, and
 * `{{POSTGRES}}…{{/POSTGRES}}` is what only PostgreSQL has (the triggers that announce changes to every relay).
 * Never change what a released migration does: add a new one. A new migration must leave a schema the
 * previous release still works with, so relays can be upgraded one at a time (docs/scale-out.md).
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    slug TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
  );
  CREATE TABLE users (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    login TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    created_at BIGINT NOT NULL
  );
  CREATE TABLE machines (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'online', 'offline')),
    hardware_json TEXT,
    agent_version TEXT,
    last_seen_at BIGINT,
    created_at BIGINT NOT NULL
  );
  CREATE INDEX machines_org ON machines(org_id);
  CREATE TABLE stacks (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    name TEXT NOT NULL,
    machine_id TEXT NOT NULL REFERENCES machines(id),
    runtime TEXT NOT NULL CHECK (runtime IN ('gguf', 'vllm', 'mlx', 'openai')),
    model_ref TEXT NOT NULL,
    model_id TEXT NOT NULL,
    harness TEXT,
    orchestrator TEXT,
    has_endpoint INTEGER NOT NULL DEFAULT 1,
    state TEXT NOT NULL DEFAULT 'draft' CHECK (state IN ('draft', 'deploying', 'deployed', 'failed', 'undeploying')),
    state_error TEXT,
    context_size INTEGER,
    deployed_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  );
  CREATE INDEX stacks_org_model ON stacks(org_id, model_id);
  CREATE INDEX stacks_machine ON stacks(machine_id);
  CREATE TABLE deployments (
    id TEXT PRIMARY KEY,
    stack_id TEXT NOT NULL REFERENCES stacks(id),
    state TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed')),
    error TEXT,
    started_at BIGINT NOT NULL,
    finished_at BIGINT
  );
  CREATE INDEX deployments_stack ON deployments(stack_id);
  CREATE TABLE deployment_steps (
    deployment_id TEXT NOT NULL REFERENCES deployments(id),
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed')),
    detail_json TEXT,
    error TEXT,
    started_at BIGINT,
    finished_at BIGINT,
    PRIMARY KEY (deployment_id, seq)
  );
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    name TEXT,
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    stack_ids_json TEXT,
    machine_ids_json TEXT,
    rpm BIGINT,
    tpm BIGINT,
    state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'revoked')),
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    last_used_at BIGINT
  );
  CREATE INDEX api_keys_org ON api_keys(org_id);
  CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
  `
  -- The state of a deployed stack's runtime as its machine last reported it (restarting, crash loop).
  ALTER TABLE stacks ADD COLUMN runtime_state TEXT;
  ALTER TABLE stacks ADD COLUMN runtime_error TEXT;
  `,
  `
  -- Web sign-in: sessions by the hash of their cookie, each with its CSRF token.
  CREATE TABLE sessions (
    id_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    csrf_token TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
  );
  CREATE INDEX sessions_user ON sessions(user_id);
  -- Who created a key (a user id; NULL when made with the admin token): members revoke only their own.
  ALTER TABLE api_keys ADD COLUMN created_by TEXT;
  `,
  `
  -- Gateway usage, aggregated per key, model and minute by the relay before it is written.
  CREATE TABLE usage_minutes (
    org_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    model TEXT NOT NULL,
    minute BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    errors BIGINT NOT NULL,
    prompt_tokens BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    PRIMARY KEY (org_id, minute, key_id, model)
  ){{WITHOUT_ROWID}};
  `,
  `
  -- What a machine last reported hosting (runtimes, models on disk), for its page in the web application.
  ALTER TABLE machines ADD COLUMN inventory_json TEXT;
  `,
  `
  -- A revoked machine: its token no longer opens a link, and it cannot reconnect.
  ALTER TABLE machines ADD COLUMN revoked_at BIGINT;
  `,
  `
  -- The SHA-256 a stack pins its model file to: the machine refuses any other file.
  ALTER TABLE stacks ADD COLUMN model_sha256 TEXT;
  `,
  `
  -- Limits for the organization's keys that set none of their own (NULL: none).
  ALTER TABLE organizations ADD COLUMN default_key_rpm BIGINT;
  ALTER TABLE organizations ADD COLUMN default_key_tpm BIGINT;
  `,
  `
  -- The options of a stack's harness layer, as a JSON object (NULL: none).
  ALTER TABLE stacks ADD COLUMN harness_options_json TEXT;
  `,
  `
  -- The options of a stack's orchestrator layer, as a JSON object (NULL: none).
  ALTER TABLE stacks ADD COLUMN orchestrator_options_json TEXT;
  `,
  `
  -- The relays running on this database, each seen within its lease (relay/cluster/change-feed.ts).
  CREATE TABLE relays (
    id TEXT PRIMARY KEY,
    url TEXT,
    link_address TEXT,
    started_at BIGINT NOT NULL,
    seen_at BIGINT NOT NULL,
    lease_ms BIGINT NOT NULL
  );
  -- The relay holding the machine's link while it is online.
  ALTER TABLE machines ADD COLUMN relay_id TEXT;
  {{POSTGRES}}
  -- Every committed change to what the relays hold in memory is announced to all of them, by the database
  -- itself (whoever wrote it): 'kind:id' on the channel makina_changes, delivered in commit order.
  CREATE FUNCTION makina_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    IF TG_OP = 'DELETE' THEN
      PERFORM pg_notify('makina_changes', TG_ARGV[0] || ':' || (to_jsonb(OLD) ->> TG_ARGV[1]));
    ELSE
      PERFORM pg_notify('makina_changes', TG_ARGV[0] || ':' || (to_jsonb(NEW) ->> TG_ARGV[1]));
    END IF;
    RETURN NULL;
  END
  $fn$;
  CREATE TRIGGER api_keys_changed AFTER INSERT OR DELETE OR UPDATE OF org_id, key_hash, stack_ids_json, machine_ids_json, rpm, tpm, state
    ON api_keys FOR EACH ROW EXECUTE FUNCTION makina_changed('key', 'id');
  CREATE TRIGGER organizations_changed AFTER INSERT OR DELETE OR UPDATE
    ON organizations FOR EACH ROW EXECUTE FUNCTION makina_changed('org', 'id');
  CREATE TRIGGER stacks_changed AFTER UPDATE ON stacks FOR EACH ROW
    WHEN (OLD.state = 'deployed' OR NEW.state = 'deployed') EXECUTE FUNCTION makina_changed('stacks', 'org_id');
  CREATE TRIGGER stacks_removed AFTER DELETE ON stacks FOR EACH ROW
    WHEN (OLD.state = 'deployed') EXECUTE FUNCTION makina_changed('stacks', 'org_id');
  CREATE TRIGGER machines_changed AFTER UPDATE OF token_hash, revoked_at
    ON machines FOR EACH ROW EXECUTE FUNCTION makina_changed('machine', 'id');
  CREATE TRIGGER settings_changed AFTER INSERT OR DELETE OR UPDATE
    ON settings FOR EACH ROW EXECUTE FUNCTION makina_changed('setting', 'key');
  {{/POSTGRES}}
  `,
  // A deployed stack is announced to the relays only when what the gateway routes on changed. Its runtime's
  // state, written at every deployment and every restart of the runtime, is not: with thousands of machines
  // linking at once, each such write made every relay read its organization's stacks again.
  `
  {{POSTGRES}}
  DROP TRIGGER stacks_changed ON stacks;
  CREATE TRIGGER stacks_changed AFTER UPDATE OF org_id, name, machine_id, runtime, model_ref, model_sha256, model_id,
    harness, harness_options_json, orchestrator, orchestrator_options_json, has_endpoint, state, context_size
    ON stacks FOR EACH ROW WHEN (OLD.state = 'deployed' OR NEW.state = 'deployed')
    EXECUTE FUNCTION makina_changed('stacks', 'org_id');
  {{/POSTGRES}}
  `,
  `
  -- People can be offboarded: a disabled user cannot sign in and the keys it made do not work.
  ALTER TABLE users ADD COLUMN disabled_at BIGINT;
  -- The audit log: each security-relevant action, who did it, when and from where (relay/audit).
  CREATE TABLE audit_events (
    id TEXT PRIMARY KEY,
    org_id TEXT,
    at BIGINT NOT NULL,
    action TEXT NOT NULL,
    outcome TEXT NOT NULL,
    actor_kind TEXT NOT NULL,
    actor_id TEXT,
    actor_login TEXT,
    address TEXT,
    target_kind TEXT,
    target_id TEXT,
    target_name TEXT,
    detail_json TEXT
  );
  CREATE INDEX audit_events_org_at ON audit_events(org_id, at, id);
  CREATE INDEX audit_events_at ON audit_events(at);
  {{POSTGRES}}
  -- A user disabled, re-roled, given a new password or deleted: every relay ends its event streams and drops its keys.
  CREATE TRIGGER users_changed AFTER DELETE OR UPDATE OF disabled_at, role, password_hash
    ON users FOR EACH ROW EXECUTE FUNCTION makina_changed('user', 'id');
  {{/POSTGRES}}
  `,
  `
  -- Keys can be edited, and can expire: from expires_at on, a key answers 401 as a revoked one does.
  ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
  {{POSTGRES}}
  DROP TRIGGER api_keys_changed ON api_keys;
  CREATE TRIGGER api_keys_changed AFTER INSERT OR DELETE OR UPDATE OF org_id, name, key_hash, stack_ids_json, machine_ids_json, rpm, tpm, state, expires_at
    ON api_keys FOR EACH ROW EXECUTE FUNCTION makina_changed('key', 'id');
  {{/POSTGRES}}
  `,
  `
  -- The request log: the gateway's last requests per organization, refused ones too (relay/usage). Its ids sort
  -- as the requests ended, so pages and pruning go by id. No prompt or answer is kept unless the stack
  -- captures them (stacks.capture_hours), and then only until capture_until.
  CREATE TABLE request_log (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    request_id TEXT NOT NULL,
    key_id TEXT,
    model TEXT NOT NULL,
    stack_id TEXT,
    machine_id TEXT,
    stream INTEGER NOT NULL,
    status INTEGER NOT NULL,
    error_code TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_ms INTEGER NOT NULL,
    first_token_ms INTEGER,
    capture_json TEXT,
    capture_until BIGINT
  );
  CREATE INDEX request_log_org ON request_log(org_id, id);
  CREATE INDEX request_log_key ON request_log(key_id, id);
  CREATE INDEX request_log_stack ON request_log(stack_id, id);
  CREATE INDEX request_log_captured ON request_log(capture_until) WHERE capture_until IS NOT NULL;
  -- A stack may keep its requests' prompts and answers in the request log, for so many hours (null: never).
  ALTER TABLE stacks ADD COLUMN capture_hours INTEGER;
  {{POSTGRES}}
  DROP TRIGGER stacks_changed ON stacks;
  CREATE TRIGGER stacks_changed AFTER UPDATE OF org_id, name, machine_id, runtime, model_ref, model_sha256, model_id,
    harness, harness_options_json, orchestrator, orchestrator_options_json, has_endpoint, state, context_size, capture_hours
    ON stacks FOR EACH ROW WHEN (OLD.state = 'deployed' OR NEW.state = 'deployed')
    EXECUTE FUNCTION makina_changed('stacks', 'org_id');
  {{/POSTGRES}}
  `,
  `
  -- A stack may ask for its context: the most tokens (prompt and answer) per request its runtime serves; null: the
  -- machine's default. What the runtime really serves stays in context_size.
  ALTER TABLE stacks ADD COLUMN max_context INTEGER;
  `,
  `
  -- Lists sorted and searched by the database (keys: relay/store/key-page.ts) fold case and sort numbers in names as
  -- numbers, the same on both databases. SQLite's are functions the relay registers on its connection
  -- (open-database.ts: foldText, naturalKey); PostgreSQL's are these, folding with ICU where the server has it
  -- (lower() of a database whose ctype is C folds ASCII only).
  {{POSTGRES}}
  DO $do$ BEGIN
    IF EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu') THEN
      EXECUTE 'CREATE FUNCTION makina_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$ SELECT lower(t COLLATE "und-x-icu") $f$';
    ELSE
      EXECUTE 'CREATE FUNCTION makina_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$ SELECT lower(t) $f$';
    END IF;
  END $do$;
  CREATE FUNCTION makina_natural(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
    SELECT string_agg(CASE WHEN m[1] ~ '^[0-9]' AND length(m[1]) < 30 THEN lpad(m[1], 30, '0') ELSE m[1] END, '' ORDER BY n)
    FROM regexp_matches(makina_fold(t), '[0-9]+|[^0-9]+', 'g') WITH ORDINALITY AS x(m, n)
  $f$;
  {{/POSTGRES}}
  `,
  `
  -- What sign-in throttling remembers, shared by every relay on the database and kept across restarts: failed
  -- sign-ins counted by key (a login from an address, an address, a login from addresses it never signed in from,
  -- a minute of all failures; each key a hash, so a login typed in the wrong field is not kept readable), and the
  -- addresses (an IPv6 one by its /64) each user signed in from, the 16 most recent.
  CREATE TABLE sign_in_failures (
    key TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    last_at BIGINT NOT NULL
  ){{WITHOUT_ROWID}};
  CREATE INDEX sign_in_failures_last ON sign_in_failures(last_at);
  CREATE TABLE sign_in_addresses (
    user_id TEXT NOT NULL REFERENCES users(id),
    address TEXT NOT NULL,
    last_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, address)
  ){{WITHOUT_ROWID}};
  `,
  ...LATER_MIGRATIONS,
];

/** The SQL of migration `v` for a dialect: `{{WITHOUT_ROWID}}` resolved, `{{POSTGRES}}…{{/POSTGRES}}` kept only on PostgreSQL. */
export function migrationSql(v: number, dialect: "sqlite" | "postgres"): string {
  const sql = MIGRATIONS[v]!.replaceAll("{{WITHOUT_ROWID}}", dialect === "sqlite" ? " WITHOUT ROWID" : "");
  return dialect === "sqlite" ? sql.replace(/\{\{POSTGRES\}\}[\s\S]*?\{\{\/POSTGRES\}\}/g, "") : sql.replaceAll(/\{\{\/?POSTGRES\}\}/g, "");
}
