import { z } from "zod";
import { answer, route } from "./route.js";
import { must, orgRef } from "./fields.js";
import type { Page } from "./list.js";
import { SERVICE_TIERS } from "../../proto/flow/service-tier.js";

/** One request through the gateway, as the request log keeps it: never its prompt or answer (see {@link RequestDetail}). */
export interface LoggedRequest {
  /** The log's id (`req_…`): sorts as the requests ended. */
  id: string;
  object: "request";
  /** When it ended, ms since the epoch. */
  at: number;
  /** The `x-request-id` its client got. */
  request_id: string;
  key_id: string | null;
  /** The key's name; null when it has none or was deleted. */
  key_name: string | null;
  /** The API called: `chat/completions`, `embeddings`, `responses`, `messages` or `messages/count_tokens`; empty for requests logged before it was kept. */
  api: string;
  /** Of `prompt_tokens`, those its runtime did not evaluate again (a GGUF sequence held them): the answer's `cached_tokens`. */
  cached_tokens: number;
  /** The service tier it was served at (`priority`, `default`, `flex`); empty when refused before it had one (or logged before tiers were kept). */
  service_tier: string;
  /** The model asked for (a router's: the model it went to); empty when the body could not be read. */
  model: string;
  stack_id: string | null;
  stack_name: string | null;
  machine_id: string | null;
  stream: boolean;
  /** The HTTP status it got; 499 when the client went away before any answer. */
  status: number;
  /** The error's code (`rate_limit_requests`, `model_not_found`…), also for a stream that failed after its 200; null when it succeeded. */
  error_code: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  /** From its arrival to its answer's end, ms. */
  latency_ms: number;
  /** From its arrival to the first token (not streamed: to the whole answer), ms; null when none came. */
  first_token_ms: number | null;
  /** How long it waited for its model to load (an on-demand stack's, on a machine linked to the relay that answered), ms; null: it did not wait. */
  load_ms: number | null;
  /** Its stack kept its prompt and answer, until `capture_until`. */
  captured: boolean;
  capture_until: number | null;
}

/** A request with what its stack's capture kept of it (admins only; null for others or once the capture expired). */
export interface RequestDetail extends LoggedRequest {
  capture: {
    /** The request's messages; a string (their JSON, cut) when they were too long to keep whole. */
    messages: unknown;
    answer: string;
    tool_calls: { name: string; arguments: string }[];
    /** The messages or the answer were cut to 64 KiB. */
    truncated: boolean;
  } | null;
}

/** What the log's `status` filter takes. */
export const REQUEST_STATUSES = ["ok", "error", "2xx", "4xx", "5xx"] as const;
/** The APIs whose requests the log keeps, as it names them. */
export const REQUEST_APIS = ["chat/completions", "embeddings", "responses", "messages", "messages/count_tokens", "rerank"] as const;
const STATUS = must(`one of ${REQUEST_STATUSES.join(", ")}, or an HTTP status (e.g. 429)`);
const PAGE = must("an integer of at least 1");
const PER_PAGE = must("an integer from 1 to 500");

/** What a read of the request log filters by. */
const REQUEST_FILTER = {
  org: orgRef(),
  stack: z.string(must("a stack id")).optional(),
  key: z.string(must("a key id")).optional(),
  model: z.string(must("a model id")).max(200, must("at most 200 characters")).optional(),
  status: z
    .string(STATUS)
    .refine((s) => (REQUEST_STATUSES as readonly string[]).includes(s) || (/^[1-5]\d\d$/.test(s)), STATUS)
    .transform((s) => ((REQUEST_STATUSES as readonly string[]).includes(s) ? (s as (typeof REQUEST_STATUSES)[number]) : Number(s)))
    .optional(),
  q: z.string(must("a string")).max(200, must("at most 200 characters")).optional(),
  /** The API called. */
  api: z.enum(REQUEST_APIS, must(`one of ${REQUEST_APIS.join(", ")}`)).optional(),
  /** The service tier it was served at. */
  service_tier: z.enum(SERVICE_TIERS, must(`one of ${SERVICE_TIERS.join(", ")}`)).optional(),
};

export const REQUEST_ROUTES = {
  /**
   * An organization's request log, newest first, a page at a time (anyone of it): the gateway's requests of
   * its keys, answered, failed and refused (401 for an expired key, 400, 403, 404, 429…). Filtered by `stack`,
   * `key`, `model`, `status` (`ok`, `error`: a status of 400 and up or a stream that failed, a class such as
   * `4xx`, or one status) and `q` (a request id, or part of a model's name).
   */
  "GET /admin/v1/requests": route({
    query: z.strictObject({
      ...REQUEST_FILTER,
      page: z.coerce.number(PAGE).int(PAGE).min(1, PAGE).default(1),
      per_page: z.coerce.number(PER_PAGE).int(PER_PAGE).min(1, PER_PAGE).max(500, PER_PAGE).default(50),
    }),
    response: answer<Page<LoggedRequest>>(),
  }),
  /** The request log as CSV (anyone of the organization), every request the same filter takes, newest first, streamed. */
  "GET /admin/v1/requests.csv": route({ query: z.strictObject(REQUEST_FILTER), response: answer<string>() }),
  /** One request of the log; its capture (prompt and answer, while kept) to admins only. */
  "GET /admin/v1/requests/:id": route({ response: answer<RequestDetail>() }),
} as const;
