import type { Generated, Selectable } from "kysely";

/**
 * The relay's tables as the query builder sees them: one row type per table, in the database's own column
 * names (`Generated`: the column has a default an insert may leave out). Times are milliseconds since the epoch (BIGINT); JSON is stored as text; booleans as 0/1.
 */
export interface Tables {
  organizations: {
    id: string;
    name: string;
    slug: string;
    default_key_rpm: number | null;
    default_key_tpm: number | null;
    created_at: number;
    budget_tokens: Generated<number | null>;
    budget_period: Generated<"day" | "week" | "month" | null>;
  };
  users: {
    id: string;
    org_id: string;
    login: string;
    password_hash: string;
    role: "admin" | "member";
    created_at: number;
    disabled_at: number | null;
    sso_subject: Generated<string | null>;
  };
  org_sso: {
    org_id: string;
    issuer: string;
    client_id: string;
    label: string;
    role_claim: string | null;
    admin_groups_json: string;
    passwords: "everyone" | "break_glass";
    break_glass_login: string | null;
    updated_at: number;
  };
  sso_flows: {
    state_hash: string;
    org_id: string;
    browser_hash: string;
    code_verifier: string;
    nonce: string;
    redirect_uri: string;
    created_at: number;
  };
  machines: {
    id: string;
    org_id: string;
    name: string;
    token_hash: string;
    state: Generated<"pending" | "online" | "offline">;
    hardware_json: string | null;
    agent_version: string | null;
    last_seen_at: number | null;
    created_at: number;
    inventory_json: string | null;
    revoked_at: number | null;
    relay_id: string | null;
  };
  stacks: {
    id: string;
    org_id: string;
    name: string;
    machine_id: string;
    runtime: "gguf" | "vllm" | "mlx" | "openai";
    model_ref: string;
    model_sha256: string | null;
    model_id: string;
    harness: string | null;
    harness_options_json: string | null;
    orchestrator: string | null;
    orchestrator_options_json: string | null;
    has_endpoint: number;
    state: Generated<"draft" | "deploying" | "deployed" | "failed" | "undeploying">;
    state_error: string | null;
    context_size: number | null;
    /** Hours the request log keeps this stack's prompts and answers; null: it keeps none. */
    capture_hours: Generated<number | null>;
    /** Tokens of context per request the stack asks its runtime for; null: the machine's default. */
    max_context: Generated<number | null>;
    /** `always` (loaded while deployed) or `on_demand` (loaded by a request, unloaded when idle). */
    residency: Generated<"always" | "on_demand">;
    /** An on-demand stack's seconds without a request before it unloads; 0: only when the memory is needed. */
    idle_unload_s: Generated<number>;
    runtime_state: string | null;
    runtime_error: string | null;
    deployed_at: number | null;
    created_at: number;
    updated_at: number;
  };
  deployments: {
    id: string;
    stack_id: string;
    state: "running" | "succeeded" | "failed";
    error: string | null;
    started_at: number;
    finished_at: number | null;
  };
  deployment_steps: {
    deployment_id: string;
    seq: number;
    kind: string;
    state: "pending" | "running" | "succeeded" | "failed";
    detail_json: string | null;
    error: string | null;
    started_at: number | null;
    finished_at: number | null;
  };
  api_keys: {
    id: string;
    org_id: string;
    name: string | null;
    prefix: string;
    key_hash: string;
    stack_ids_json: string | null;
    machine_ids_json: string | null;
    rpm: number | null;
    tpm: number | null;
    state: Generated<"active" | "revoked">;
    created_at: number;
    revoked_at: number | null;
    last_used_at: number | null;
    created_by: string | null;
    expires_at: Generated<number | null>;
    blocked_at: Generated<number | null>;
    regenerated_at: Generated<number | null>;
    old_key_hash: Generated<string | null>;
    old_secret_until: Generated<number | null>;
    service_tier: Generated<"priority" | "default" | "flex">;
    budget_tokens: Generated<number | null>;
    budget_period: Generated<"day" | "week" | "month" | null>;
  };
  settings: {
    key: string;
    value: string;
  };
  alert_webhooks: {
    id: string;
    org_id: string;
    name: string | null;
    url: string;
    events_json: string;
    machine_offline_after_s: number;
    error_rate_percent: number;
    created_at: number;
    created_by: string | null;
  };
  alert_deliveries: {
    id: string;
    webhook_id: string;
    org_id: string;
    event_id: string;
    event_type: string;
    body: string;
    state: "pending" | "delivered" | "failed";
    attempts: number;
    next_at: number;
    lease_until: number;
    last_status: number | null;
    last_error: string | null;
    created_at: number;
    delivered_at: number | null;
  };
  audit_events: {
    id: string;
    org_id: string | null;
    at: number;
    action: string;
    outcome: "success" | "failure";
    actor_kind: "operator" | "user" | "anonymous" | "bootstrap";
    actor_id: string | null;
    actor_login: string | null;
    address: string | null;
    target_kind: string | null;
    target_id: string | null;
    target_name: string | null;
    detail_json: string | null;
  };
  sessions: {
    id_hash: string;
    user_id: string;
    csrf_token: string;
    created_at: number;
    expires_at: number;
  };
  relays: {
    id: string;
    url: string | null;
    link_address: string | null;
    started_at: number;
    seen_at: number;
    lease_ms: number;
  };
  request_log: {
    id: string;
    org_id: string;
    at: number;
    request_id: string;
    key_id: string | null;
    model: string;
    stack_id: string | null;
    machine_id: string | null;
    stream: number;
    status: number;
    error_code: string | null;
    prompt_tokens: number;
    completion_tokens: number;
    latency_ms: number;
    first_token_ms: number | null;
    load_ms: number | null;
    capture_json: string | null;
    capture_until: number | null;
    api: Generated<string>;
    service_tier: Generated<string>;
    cached_tokens: Generated<number>;
  };
  sign_in_failures: {
    key: string;
    failures: number;
    last_at: number;
  };
  sign_in_addresses: {
    user_id: string;
    address: string;
    last_at: number;
  };
  usage_minutes: {
    org_id: string;
    key_id: string;
    model: string;
    minute: number;
    requests: number;
    errors: number;
    prompt_tokens: number;
    completion_tokens: number;
    priority_requests: Generated<number>;
    flex_requests: Generated<number>;
  };
}

/** A row of `table` as a query returns it. */
export type Row<T extends keyof Tables> = Selectable<Tables[T]>;
