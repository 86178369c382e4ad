/**
 * The relay's error answers in the words of the page that shows them: one table from error code to text. The
 * relay's own messages are sentences for people when they say what conflicts, what is not allowed or what is
 * missing; where they speak the API's language (a parameter's name, a transport failure), the page says it
 * in its own.
 */

/** The fields the admin API names in `param`, by the labels the pages give them. */
const FIELD_LABELS: Record<string, string> = {
  name: "Name",
  login: "Login",
  password: "Password",
  current_password: "Current password",
  new_password: "New password",
  role: "Role",
  rpm: "Requests per minute",
  tpm: "Tokens per minute",
  default_key_rpm: "Requests per minute",
  default_key_tpm: "Tokens per minute",
  stacks: "Stacks",
  machines: "Machines",
  machine: "Machine",
  expires_at: "Expires",
  runtime: "Runtime",
  model: "Model",
  model_sha256: "Model SHA-256",
  model_id: "Model id",
  harness: "Harness",
  orchestrator: "Orchestrator",
  capture_hours: "Prompts and answers",
  max_context: "Context size",
  "harness_options.prompt": "System prompt",
  "harness_options.parallel_tool_calls": "Tool calls",
  "harness_options.default": "Default model id",
  "harness_options.routes": "Routes",
  "orchestrator_options.rounds": "Rounds",
  "orchestrator_options.samples": "Samples",
  "orchestrator_options.temperature": "Sample temperature",
};

/** The API's words for a value, in a form's (a field left empty is the API's null). */
const FORM_WORDS: [RegExp, string][] = [
  [/\ba positive integer\b/g, "a whole number of 1 or more"],
  [/\ban integer\b/g, "a whole number"],
  [/\bor null\b/g, "or empty"],
];

/**
 * Every error code of the relay (proto/errors' one table, and `network_error` of this client) with what a page
 * says for it, or null where the relay's message is a sentence written for people (what conflicts, who may,
 * why a stack cannot run, what is not there, which field is wrong: that one gets its label, see
 * {@link errorText}). A code the relay gains fails test/unit/error-text.test.ts until it is placed here.
 */
export const ERROR_TEXTS: Readonly<Record<string, string | null>> = {
  network_error: "The relay cannot be reached. Check that it is running, then try again.",
  storage_unavailable: "The relay cannot reach its database just now, so nothing was changed. Try again in a moment.",
  internal_error: "Something went wrong on the relay, so nothing was changed. Try again; if it keeps happening, the relay's log says why.",
  invalid_csrf_token: "This page is out of step with your session. Reload the page, then try again.",
  too_many_streams: "Too many of your pages follow live changes at once. Close a few tabs, then reload this one.",
  invalid_json: "The relay could not read what this page sent. Reload the page, then try again.",
  bad_request: "The relay could not read what this page sent. Reload the page, then try again.",
  unsupported_media_type: "The relay could not read what this page sent. Reload the page, then try again.",
  headers_too_large: "The relay could not read what this page sent. Reload the page, then try again.",
  unknown_parameter: "This page sent something the relay does not know. Reload the page: the relay may have been updated.",
  unknown_url: "This version of the relay does not know that action. Reload the page: the relay may have been updated.",
  request_too_large: "That is more than the relay takes in one go. Send something shorter.",
  request_timeout: "The relay waited too long for what this page sent. Check the connection, then try again.",
  timeout: "The relay took too long to answer. Try again.",
  canceled: "Stopped before it finished.",
  missing_api_key: null,
  invalid_api_key: null,
  model_access_denied: null,
  model_not_found: null,
  rate_limit_requests: null,
  rate_limit_tokens: null,
  budget_exceeded: null,
  machine_offline: null,
  runtime_unavailable: null,
  // Names the stacks holding the machine: the relay's sentence says more than any of ours.
  insufficient_memory: null,
  limits_unavailable: null,
  hub_unavailable: null,
  unsupported_endpoint: null,
  missing_required_parameter: null,
  invalid_value: null,
  unsupported_parameter: null,
  context_length_exceeded: null,
  stream_incomplete: null,
  invalid_admin_token: null,
  invalid_credentials: null,
  sign_in_throttled: null,
  permission_denied: null,
  invalid_machine_token: null,
  unsupported_protocol: null,
  not_found: null,
  incompatible_stack: null,
  conflict: null,
};

/** A parameter's label: its own, or the label of the field it is part of (`harness_options.prompt` → Harness). */
function labelOf(param: string): string | undefined {
  return FIELD_LABELS[param] ?? FIELD_LABELS[param.split(".")[0]!];
}

/**
 * The text a page shows for an error answer: the table's for its code; for a value refused or missing, the
 * relay's sentence with the field's label where it named the parameter (`'rpm' must be a positive integer.` →
 * `Requests per minute must be a whole number of 1 or more.`); otherwise the relay's message.
 */
export function errorText(code: string | null, param: string | null, message: string): string {
  const own = code === null ? undefined : ERROR_TEXTS[code];
  if (own) return own;
  if ((code === "invalid_value" || code === "missing_required_parameter") && param) {
    const label = labelOf(param);
    if (label) {
      if (code === "missing_required_parameter") return `${label} is required.`;
      const named = `'${param}'`;
      const said = message.startsWith(named) ? label + message.slice(named.length) : message.replaceAll(named, label);
      return FORM_WORDS.reduce((text, [api, form]) => text.replace(api, form), said);
    }
  }
  return message;
}
