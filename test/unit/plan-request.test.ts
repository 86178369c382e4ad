import { describe, expect, it } from "vitest";
import { decodeChatRequest } from "../../relay/http/openai/index.js";
import type { ApiKeyRecord } from "../../relay/keys/index.js";
import { planRequest, RoutePatterns, type RoutableSession } from "../../relay/routing/index.js";
import type { Stack } from "../../relay/store/index.js";

const stack = (o: Partial<Stack> & { id: string; modelId: string }): Stack =>
  ({ orgId: "org", machineId: `m-${o.id}`, runtime: "gguf", harness: null, harnessOptions: {}, orchestrator: null, orchestratorOptions: {}, contextSize: 4096, ...o }) as Stack;
const key = (o: Partial<ApiKeyRecord> = {}) => ({ id: "key", orgId: "org", stackIds: null, machineIds: null, ...o }) as ApiKeyRecord;

/** A planner over these stacks, every one ready on its own machine with `inFlight` requests. */
function deps(stacks: Stack[], inFlight: Record<string, number> = {}) {
  const sessions = new Map<string, RoutableSession>(stacks.map((s) => [s.machineId, { state: "open", readyStacks: new Set([s.id]), inFlight: inFlight[s.id] ?? 0, congested: false }]));
  return {
    directory: { servingModel: (orgId: string, modelId: string) => stacks.filter((s) => s.orgId === orgId && s.modelId === modelId), routePatterns: new RoutePatterns() },
    registry: { get: (machineId: string) => sessions.get(machineId) },
    defaultCompletionEstimate: 100,
  };
}
const chat = (body: Record<string, unknown>) => decodeChatRequest({ model: "small", messages: [{ role: "user", content: "12345678" }], ...body });

describe("planning where a request runs", () => {
  it("picks the least busy stack serving the model, with one step and the estimate of its prompt and completion", () => {
    const planner = deps([stack({ id: "a", modelId: "small" }), stack({ id: "b", modelId: "small" })], { a: 2, b: 0 });
    const plan = planRequest(planner, chat({ max_tokens: 10 }), key());
    expect({ model: plan.model, stack: plan.stack.id, steps: plan.steps, estimatedTokens: plan.estimatedTokens }).toEqual({ model: "small", stack: "b", steps: 1, estimatedTokens: 2 + 4 + 10 });
  });

  it("sends a router stack's request on to the model its first matching rule names, which answers", () => {
    const router = stack({ id: "r", modelId: "small", harness: "router", harnessOptions: { routes: [{ model: "big", min_chars: 5 }] } as Stack["harnessOptions"] });
    const planner = deps([router, stack({ id: "big", modelId: "big" })]);
    expect(planRequest(planner, chat({}), key())).toMatchObject({ model: "big", stack: { id: "big" } });
    expect(planRequest(planner, chat({ messages: [{ role: "user", content: "hi" }] }), key())).toMatchObject({ model: "small", stack: { id: "r" } });
  });

  it("keeps a request's prompt and answer as long as the stack that answers, or the router that sent it there, captures them", () => {
    const router = (captureHours: number | null) => stack({ id: "r", modelId: "small", harness: "router", captureHours, harnessOptions: { routes: [{ model: "big", min_chars: 5 }] } as Stack["harnessOptions"] });
    const big = (captureHours: number | null) => stack({ id: "big", modelId: "big", captureHours });
    expect(planRequest(deps([router(24), big(2)]), chat({}), key()).captureHours).toBe(24);
    expect(planRequest(deps([router(1), big(48)]), chat({}), key()).captureHours).toBe(48);
    expect(planRequest(deps([router(null), big(null)]), chat({}), key()).captureHours).toBeNull();
    // Not routed on: the router answers itself, with its own capture.
    expect(planRequest(deps([router(null), big(48)]), chat({ messages: [{ role: "user", content: "hi" }] }), key()).captureHours).toBeNull();
  });

  it("counts every step of an orchestrator in the estimate", () => {
    const vote = stack({ id: "v", modelId: "small", orchestrator: "vote", orchestratorOptions: { samples: 3 } });
    expect(planRequest(deps([vote]), chat({ max_tokens: 10 }), key())).toMatchObject({ steps: 3, estimatedTokens: 3 * 16 });
  });

  it("refuses what no stack can do, naming the parameter, the limit or the key's restriction", () => {
    const planner = deps([stack({ id: "a", modelId: "small", contextSize: 64 })]);
    expect(() => planRequest(planner, chat({ n: 2 }), key())).toThrow(expect.objectContaining({ code: "unsupported_parameter", param: "n" }));
    expect(() => planRequest(planner, chat({ tools: [{ type: "function", function: { name: "f" } }] }), key())).toThrow(
      expect.objectContaining({ code: "unsupported_parameter", param: "tools", message: expect.stringContaining("'tools' harness") }),
    );
    expect(() => planRequest(planner, chat({ max_tokens: 65 }), key())).toThrow(expect.objectContaining({ code: "context_length_exceeded", param: "max_tokens" }));
    expect(() => planRequest(planner, chat({}), key({ stackIds: ["other"] }))).toThrow(expect.objectContaining({ code: "model_access_denied" }));
    expect(() => planRequest(planner, chat({ model: "nope" }), key())).toThrow(expect.objectContaining({ code: "model_not_found" }));
  });
});
