/**
 * The later half of the schema migrations (see MIGRATIONS in migrations.ts, whose order they continue: never
 * change a released one, add a new one at the end).
 */
export const LATER_MIGRATIONS: readonly string[] = [
  `
  -- A stack's residency: 'always' (loaded when deployed, until undeployed) or 'on_demand' (loaded by its first
  -- request, unloaded after idle_unload_s seconds without one; 0: only when the machine needs the memory). The
  -- gateway gives an on-demand stack's first token the time of its load.
  ALTER TABLE stacks ADD COLUMN residency TEXT NOT NULL DEFAULT 'always';
  ALTER TABLE stacks ADD COLUMN idle_unload_s INTEGER NOT NULL DEFAULT 600;
  {{POSTGRES}}
  DROP TRIGGER stacks_changed ON stacks;
  CREATE TRIGGER stacks_changed AFTER UPDATE OF org_id, name, machine_id, runtime, model_ref, model_sha256, model_id,
    harness, harness_options_json, orchestrator, orchestrator_options_json, has_endpoint, state, context_size, capture_hours,
    residency, idle_unload_s
    ON stacks FOR EACH ROW WHEN (OLD.state = 'deployed' OR NEW.state = 'deployed')
    EXECUTE FUNCTION makina_changed('stacks', 'org_id');
  {{/POSTGRES}}
  `,
  `
  -- How long a request waited for its model to load (an on-demand stack's), ms; null: it did not wait.
  ALTER TABLE request_log ADD COLUMN load_ms INTEGER;
  -- A stack deployed again is routed while it redeploys: its changes while deploying are news too.
  {{POSTGRES}}
  DROP TRIGGER stacks_changed ON stacks;
  CREATE TRIGGER stacks_changed AFTER UPDATE OF org_id, name, machine_id, runtime, model_ref, model_sha256, model_id,
    harness, harness_options_json, orchestrator, orchestrator_options_json, has_endpoint, state, context_size, capture_hours,
    residency, idle_unload_s, deployed_at
    ON stacks FOR EACH ROW WHEN (OLD.state IN ('deployed', 'deploying') OR NEW.state IN ('deployed', 'deploying'))
    EXECUTE FUNCTION makina_changed('stacks', 'org_id');
  {{/POSTGRES}}
  `,
  `
  -- A key an admin blocked (when, ms; null: not blocked): refused, and its requests logged as its own, until unblocked.
  ALTER TABLE api_keys ADD COLUMN blocked_at BIGINT;
  -- A key whose secret was made again (when, ms): its old secret's hash, and until when (ms) the old secret still works.
  ALTER TABLE api_keys ADD COLUMN regenerated_at BIGINT;
  ALTER TABLE api_keys ADD COLUMN old_key_hash TEXT;
  ALTER TABLE api_keys ADD COLUMN old_secret_until BIGINT;
  {{POSTGRES}}
  DROP TRIGGER api_keys_changed ON api_keys;
  CREATE TRIGGER api_keys_changed AFTER INSERT OR DELETE OR UPDATE OF org_id, name, key_hash, stack_ids_json, machine_ids_json, rpm, tpm, state,
    expires_at, blocked_at, old_key_hash, old_secret_until
    ON api_keys FOR EACH ROW EXECUTE FUNCTION makina_changed('key', 'id');
  {{/POSTGRES}}
  `,
  `
  -- Which API a request called ('chat/completions', 'embeddings', 'responses', 'messages', 'messages/count_tokens');
  -- empty for the requests logged before it was kept.
  ALTER TABLE request_log ADD COLUMN api TEXT NOT NULL DEFAULT '';
  `,
  `
  -- The most a key may ask of the service tiers ('priority', 'default', 'flex'): its requests ask it, or less.
  ALTER TABLE api_keys ADD COLUMN service_tier TEXT NOT NULL DEFAULT 'default' CHECK (service_tier IN ('priority', 'default', 'flex'));
  -- The tier a request was served at (or refused at); empty when it was refused before it had one.
  ALTER TABLE request_log ADD COLUMN service_tier TEXT NOT NULL DEFAULT '';
  -- Of its prompt's tokens, those its runtime did not evaluate again (a context sequence held them).
  ALTER TABLE request_log ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
  -- Of a minute's requests, those served at the priority and the flex tier (the rest: default, or none).
  ALTER TABLE usage_minutes ADD COLUMN priority_requests BIGINT NOT NULL DEFAULT 0;
  ALTER TABLE usage_minutes ADD COLUMN flex_requests BIGINT NOT NULL DEFAULT 0;
  {{POSTGRES}}
  DROP TRIGGER api_keys_changed ON api_keys;
  CREATE TRIGGER api_keys_changed AFTER INSERT OR DELETE OR UPDATE OF org_id, name, key_hash, stack_ids_json, machine_ids_json, rpm, tpm, state,
    expires_at, blocked_at, old_key_hash, old_secret_until, service_tier
    ON api_keys FOR EACH ROW EXECUTE FUNCTION makina_changed('key', 'id');
  {{/POSTGRES}}
  `,
  `
  -- Token budgets (prompt plus completion tokens per calendar period, UTC) of a key and of an organization
  -- (which covers all its keys); NULL: none.
  ALTER TABLE api_keys ADD COLUMN budget_tokens BIGINT;
  ALTER TABLE api_keys ADD COLUMN budget_period TEXT CHECK (budget_period IN ('day', 'week', 'month'));
  ALTER TABLE organizations ADD COLUMN budget_tokens BIGINT;
  ALTER TABLE organizations ADD COLUMN budget_period TEXT CHECK (budget_period IN ('day', 'week', 'month'));
  {{POSTGRES}}
  DROP TRIGGER api_keys_changed ON api_keys;
  CREATE TRIGGER api_keys_changed AFTER INSERT OR DELETE OR UPDATE OF org_id, name, key_hash, stack_ids_json, machine_ids_json, rpm, tpm, state,
    expires_at, blocked_at, old_key_hash, old_secret_until, service_tier, budget_tokens, budget_period
    ON api_keys FOR EACH ROW EXECUTE FUNCTION makina_changed('key', 'id');
  {{/POSTGRES}}
  `,
  `
  -- Where an organization's alerts go: a URL, the events it wants (a JSON array), when a machine counts as gone
  -- (seconds offline) and an error rate as too high (percent). Its signing secret is sealed in the settings.
  CREATE TABLE alert_webhooks (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    name TEXT,
    url TEXT NOT NULL,
    events_json TEXT NOT NULL,
    machine_offline_after_s INTEGER NOT NULL,
    error_rate_percent INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    created_by TEXT
  );
  CREATE INDEX alert_webhooks_org ON alert_webhooks(org_id);
  -- One event sent to one webhook (once: an event has one id on every relay), and how its sending went.
  CREATE TABLE alert_deliveries (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL,
    next_at BIGINT NOT NULL,
    lease_until BIGINT NOT NULL,
    last_status INTEGER,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    delivered_at BIGINT,
    UNIQUE (webhook_id, event_id)
  );
  CREATE INDEX alert_deliveries_due ON alert_deliveries(state, next_at);
  CREATE INDEX alert_deliveries_webhook ON alert_deliveries(webhook_id, created_at);
  `,
  `
  -- An organization's single sign-on: its OpenID provider (the client secret is sealed in the settings), the
  -- claim that carries groups and the groups that make an admin, what its button says, and whether passwords
  -- still sign in ('everyone', or 'break_glass': only the login named).
  CREATE TABLE org_sso (
    org_id TEXT PRIMARY KEY,
    issuer TEXT NOT NULL,
    client_id TEXT NOT NULL,
    label TEXT NOT NULL,
    role_claim TEXT,
    admin_groups_json TEXT NOT NULL,
    passwords TEXT NOT NULL CHECK (passwords IN ('everyone', 'break_glass')),
    break_glass_login TEXT,
    updated_at BIGINT NOT NULL
  );
  -- The provider's subject a person signs in as (null: a person with a password only).
  ALTER TABLE users ADD COLUMN sso_subject TEXT;
  CREATE UNIQUE INDEX users_sso_subject ON users(org_id, sso_subject);
  -- Sign-ins under way through a provider, by the hash of their state: what the callback checks, used once.
  CREATE TABLE sso_flows (
    state_hash TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    browser_hash TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    nonce TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    created_at BIGINT NOT NULL
  );
  CREATE INDEX sso_flows_org ON sso_flows(org_id, created_at);
  CREATE INDEX sso_flows_created ON sso_flows(created_at);
  `,
];
