import type { AgentToRelay, FinishReason, RelayToAgent, RuntimeState, UnloadReason, Usage } from "../../proto/index.js";
import type { AgentMessage, RelayMessage } from "../../proto/wire.js";

const FINISH_REASONS: ReadonlySet<string> = new Set<FinishReason>(["stop", "length", "tool_calls", "canceled"]);
const RUNTIME_STATES: ReadonlySet<string> = new Set<RuntimeState>(["loading", "ready", "failed", "unloaded", "unloading"]);
const UNLOAD_REASONS: ReadonlySet<string> = new Set<UnloadReason>(["idle", "memory", "asked"]);

/** The relay's reading of a wire message from an agent; `undefined` for one it does not know (ignored). */
export function decodeAgentMessage(message: AgentMessage): AgentToRelay | undefined {
  const body = message.body;
  switch (body?.$case) {
    case "inferenceChunk": {
      const { requestId, text, toolCall, embedding, score } = body.value;
      if (embedding) return { type: "embedding", requestId, index: embedding.index, values: embedding.values };
      if (score) return { type: "score", requestId, index: score.index, score: score.relevanceScore };
      return toolCall ? { type: "toolCall", requestId, ...toolCall } : { type: "text", requestId, text };
    }
    case "inferenceEnd": {
      const { requestId, outcome } = body.value;
      const u = body.value.usage;
      const usage: Usage = { promptTokens: u?.promptTokens ?? 0, completionTokens: u?.completionTokens ?? 0 };
      // A machine's word for what it reused, never more than the prompt.
      if (u?.cachedTokens) usage.cachedTokens = Math.min(u.cachedTokens, usage.promptTokens);
      if (outcome?.$case === "done") {
        const reason = outcome.value.finishReason;
        return { type: "end", requestId, finishReason: FINISH_REASONS.has(reason) ? (reason as FinishReason) : "stop", usage };
      }
      const error = outcome?.$case === "error" ? outcome.value : { code: "internal_error", message: "The agent ended the request without an outcome.", retryAfterMs: 0, param: "" };
      return { type: "failed", requestId, error, usage };
    }
    case "hello":
      return {
        type: "hello",
        protocolVersion: body.value.protocolVersion,
        agentVersion: body.value.agentVersion,
        hardware: body.value.hardware ?? { platform: "", os: "", arch: "", cpuModel: "", cpuPhysicalCores: 0, cpuLogicalCores: 0, memoryBytes: 0, gpus: [], disks: [], accelerators: [] },
      };
    case "heartbeat":
      return { type: "heartbeat", ...body.value };
    case "progress": {
      const { commandId, ...progress } = body.value;
      return { type: "progress", commandId, progress };
    }
    case "commandResult": {
      const { commandId, error, ...result } = body.value;
      return error ? { type: "stepFailed", commandId, error } : { type: "result", commandId, result };
    }
    case "hardware":
      return { type: "hardware", hardware: body.value };
    case "runtimeState": {
      const { stackId, state, error, reason, loadMs, contextSize } = body.value;
      if (!RUNTIME_STATES.has(state)) return undefined;
      return {
        type: "runtimeState",
        stackId,
        state: state as RuntimeState,
        error,
        ...(UNLOAD_REASONS.has(reason) && { reason: reason as UnloadReason }),
        ...(loadMs > 0 && { loadMs }),
        ...(contextSize > 0 && { contextSize }),
      };
    }
    case "inventory":
      return { type: "inventory", inventory: body.value };
    case "metrics":
      return { type: "metrics", stacks: body.value.stacks };
    case "load":
      return { type: "load", load: body.value };
    case undefined:
      return undefined;
  }
}

/** The wire form of a message to an agent. */
export function encodeRelayMessage(message: RelayToAgent): RelayMessage {
  switch (message.type) {
    case "infer": {
      const { input } = message;
      return {
        body: {
          $case: "infer",
          value: {
            requestId: message.requestId,
            stackId: message.stackId,
            initialCredit: message.credit,
            // The wire's messages have every field; a conversation without tools has none of them set.
            messages: input.messages.map((m) => ({ role: m.role, content: m.content, toolCalls: m.toolCalls ?? [], toolCallId: m.toolCallId ?? "", parts: m.parts ?? [] })),
            temperature: input.temperature,
            topP: input.topP,
            maxTokens: input.maxTokens,
            stop: input.stop,
            seed: input.seed,
            presencePenalty: input.presencePenalty,
            frequencyPenalty: input.frequencyPenalty,
            stream: input.stream,
            responseFormat: input.responseFormat,
            unset: input.unset ?? [],
            tools: input.tools ?? [],
            toolChoice: input.toolChoice ?? "",
            toolChoiceFunction: input.toolChoiceFunction ?? "",
            parallelToolCalls: input.parallelToolCalls,
            embed: input.embed ?? [],
            dimensions: input.dimensions ?? 0,
            rerank: input.rerank,
            countOnly: input.countOnly ?? false,
            serviceTier: input.serviceTier ?? "",
            fairShareKey: input.fairShareKey ?? "",
          },
        },
      };
    }
    case "credit":
      return { body: { $case: "credit", value: { requestId: message.requestId, credits: message.credits } } };
    case "cancelCommand":
      return { body: { $case: "cancelCommand", value: { commandId: message.commandId, reason: message.reason } } };
    case "cancel":
      return { body: { $case: "cancel", value: { requestId: message.requestId, reason: message.reason } } };
    case "welcome":
      return { body: { $case: "welcome", value: { machineId: message.machineId, heartbeatIntervalMs: message.heartbeatIntervalMs, protocolVersion: message.protocolVersion } } };
    case "command": {
      const { commandId, stackId, step } = message;
      const wireStep = ((): NonNullable<Extract<RelayMessage["body"], { $case: "command" }>["value"]["step"]> => {
        switch (step.kind) {
          case "installRuntime":
            return { $case: "installRuntime", value: { runtime: step.runtime } };
          case "pullModel":
            return { $case: "pullModel", value: { ref: step.ref, sha256: step.sha256, runtime: step.runtime } };
          case "configureEndpoint":
            return { $case: "configureEndpoint", value: { runtime: step.runtime, modelRef: step.modelRef, modelId: step.modelId, harness: step.harness, harnessOptionsJson: step.harnessOptionsJson, orchestrator: step.orchestrator, orchestratorOptionsJson: step.orchestratorOptionsJson, maxContext: step.maxContext, residency: step.residency, idleUnloadS: step.idleUnloadS } };
          case "removeStack":
            return { $case: "removeStack", value: {} };
          case "checkModel":
            return { $case: "checkModel", value: { ref: step.ref, runtime: step.runtime } };
          case "loadModel":
            return { $case: "loadModel", value: { load: step.load } };
          case "readLog":
            return { $case: "readLog", value: { after: step.after, limit: step.limit } };
        }
      })();
      return { body: { $case: "command", value: { commandId, stackId, step: wireStep } } };
    }
  }
}
