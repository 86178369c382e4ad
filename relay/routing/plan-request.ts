import { harnessHonouring, honouredParameters, MakinaError, orchestratorSteps, type ChatInput, type ServiceTier } from "../../proto/index.js";
import type { AgentSession } from "../link/index.js";
import { estimateTokens } from "../limits/index.js";
import type { ApiKeyRecord, Stack } from "../store/index.js";
import { pickTarget, stacksForKey, type RoutableSession } from "./route-request.js";
import { routedModel, type RoutePatterns } from "./routed-model.js";
import { servedTier, type AskedTier } from "./served-tier.js";
import { promptAffinity } from "./prompt-affinity.js";

/** What planning reads of a validated chat request (the gateway's `ChatRequest` is one). */
export interface PlannableRequest {
  /** The model id the client asked for. */
  model: string;
  /** Parameters given with a value that changes the output beyond the basics: the stack's runtime must honour each. */
  needs: readonly string[];
  /** Where the first image part is, for the refusal's `param`; undefined when the request has none. */
  imagePart: string | undefined;
  /** The request as the runtime gets it. */
  input: ChatInput;
  /**
   * The client's name of a parameter of the domain (`max_tokens`, `messages`, a need such as `response_format`):
   * the API's own (`max_output_tokens`, `input`, `text.format` in the Responses API), for a refusal that names it.
   */
  paramName(param: string): string;
  /** The service tier it asks (`service_tier`); absent: `auto`, its key's. */
  serviceTier?: AskedTier;
  /** The client's word for requests that share a prompt (`prompt_cache_key`, else `user` or `metadata.user_id`): they go to one replica. */
  cacheKey?: string;
}

/** Where a request runs and what it may cost. */
export interface RequestPlan<S extends RoutableSession = AgentSession> {
  /** The model id that answers: the one asked for, or the one a router stack sent the request on to. */
  model: string;
  /** The stack that answers. */
  stack: Stack;
  /** The link of the stack's machine. */
  session: S;
  /** How many times the model runs for one answer (an orchestrator's steps; 1 without one). */
  steps: number;
  /** Tokens the request is expected to use, every step counted, for the key's token limit before it runs. */
  estimatedTokens: number;
  /** Hours the request log keeps this request's prompt and answer: the longest of its stack's and of the router's that sent it there; null: none. */
  captureHours: number | null;
  /** The service tier it is served at: its place in the queues, and what its answer says. */
  tier: ServiceTier;
}

/** What planning looks at: the keys' routes, the machines' links, and the completion assumed when `max_tokens` is absent. */
export interface PlannerDeps<S extends RoutableSession = AgentSession> {
  directory: {
    servingModel(orgId: string, modelId: string): Stack[];
    /** Router rules' patterns, compiled once each. */
    readonly routePatterns: RoutePatterns;
  };
  registry: { get(machineId: string): S | undefined };
  /** Completion tokens assumed for the estimate when the request sets no `max_tokens`. */
  defaultCompletionEstimate: number;
  /** A number that changes with each request: which of equally good replicas takes it. */
  turn?: () => number;
  /** Requests in flight and waiting per stack, as this relay admitted them (a replica's own load, where its machine's counts several). */
  gate?: { load(stackId: string): { inFlight: number; waiting: number } };
}

/**
 * The gateway's routing policy in one place: a validated request and its key become a plan, or a refusal
 * (a `MakinaError`, thrown). In order: the service tier it asks, within its key's; the stacks serving the model that the key may use; a router stack's
 * rules, which may send the request on to another model of the organization (once); the stacks whose runtime
 * and layers honour every parameter the request needs; among them, the ready one with the fewest requests in
 * flight; its context against `max_tokens`; and the token estimate for every step its orchestrator runs.
 */
export function planRequest<S extends RoutableSession>(deps: PlannerDeps<S>, request: PlannableRequest, key: ApiKeyRecord): RequestPlan<S> {
  // A tier above the key's is refused before anything else is looked at.
  const tier = servedTier(request.serviceTier, key.serviceTier);
  let model = request.model;
  let allowed = stacksForKey(deps.directory, key, model);
  const router = allowed[0]!;
  let via: Stack | undefined;
  if (router.harness === "router") {
    const routed = routedModel(router, { messages: request.input.messages, tools: request.needs.includes("tools"), images: request.imagePart !== undefined }, deps.directory.routePatterns);
    if (routed !== undefined && routed !== model) {
      allowed = stacksForKey(deps.directory, key, routed);
      model = routed;
      via = router;
    }
  }
  const capable = allowed.filter((st) => request.needs.every((p) => honouredParameters(st.runtime, st.harness, st.orchestrator).includes(p)));
  if (capable.length === 0) throw unsupported(allowed[0]!, request, model);
  // Requests that share a prompt's beginning go where it is held already, when several replicas could take them.
  const gate = deps.gate;
  const { stack, session } = pickTarget(deps.registry, capable, deps.turn?.() ?? 0, () => promptAffinity(request.input, request.cacheKey), gate && ((id) => gate.load(id).waiting));
  const maxTokens = request.input.maxTokens;
  if (maxTokens > 0 && stack.contextSize !== null && maxTokens > stack.contextSize) {
    const param = request.paramName("max_tokens");
    throw new MakinaError("context_length_exceeded", `This model's maximum context length is ${stack.contextSize} tokens, but ${param} is ${maxTokens}.`, { param });
  }
  // An orchestrator runs the model several times for one answer: every run counts.
  const steps = stack.orchestrator ? orchestratorSteps(stack.orchestrator, stack.orchestratorOptions) : 1;
  const estimatedTokens = steps * estimateTokens(request.input.messages, maxTokens > 0 ? maxTokens : null, deps.defaultCompletionEstimate, request.input.embed, request.input.rerank);
  return { model, stack, session, steps, estimatedTokens, captureHours: Math.max(stack.captureHours ?? 0, via?.captureHours ?? 0) || null, tier };
}

/** The refusal when no stack serving `model` honours a parameter the request needs: the first such parameter, named. */
function unsupported(first: Stack, request: PlannableRequest, model: string): MakinaError {
  const need = request.needs.find((p) => !honouredParameters(first.runtime, first.harness, first.orchestrator).includes(p))!;
  const param = request.paramName(need);
  if (need === "embeddings") {
    return new MakinaError("unsupported_parameter", first.orchestrator ? `\`${model}\` is served by a stack with the '${first.orchestrator}' orchestrator, which answers chats only: it has no embeddings.` : `The ${first.runtime} runtime serving \`${model}\` has no embeddings.`, { param: "model" });
  }
  if (need === "rerank") {
    return new MakinaError("unsupported_parameter", first.orchestrator ? `\`${model}\` is served by a stack with the '${first.orchestrator}' orchestrator, which answers chats only: it does not rerank.` : `The ${first.runtime} runtime serving \`${model}\` does not rerank.`, { param: "model" });
  }
  if (need === "count_tokens") {
    return new MakinaError("unsupported_parameter", first.orchestrator ? `\`${model}\` is served by a stack with the '${first.orchestrator}' orchestrator, which runs several prompts for one answer: its tokens cannot be counted.` : `The ${first.runtime} runtime serving \`${model}\` cannot count tokens: only a GGUF stack holds its model's tokenizer on the machine.`, { param: "model" });
  }
  if (need === "image_url") {
    return new MakinaError("unsupported_parameter", `Image parts are not supported by the ${first.runtime} runtime serving \`${model}\`.`, { param });
  }
  const harness = first.orchestrator ? undefined : harnessHonouring(first.runtime, need);
  const hint = harness && harness !== first.harness ? ` (a ${first.runtime} stack takes it with the '${harness}' harness)` : "";
  return new MakinaError("unsupported_parameter", `The parameter '${param}' with this value is not supported by the ${first.runtime} runtime serving \`${model}\`${hint}.`, { param });
}
