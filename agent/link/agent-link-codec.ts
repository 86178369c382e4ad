import { EMPTY_STEP_RESULT, type Usage, FAIR_SHARE_KEY_MAX, isServiceTier, type AgentToRelay, type ChatInput, type ChatMessage, type DeployStep, type RelayToAgent, type ResponseFormat, type ToolChoice } from "../../proto/index.js";
import type { AgentMessage, RelayMessage } from "../../proto/wire.js";

type WireChatMessage = Extract<RelayMessage["body"], { $case: "infer" }>["value"]["messages"][number];

/** A wire message as the link's: the fields the wire always has (empty lists, empty ids) only when set. */
function chatMessage(m: WireChatMessage): ChatMessage {
  const message: ChatMessage = { role: m.role, content: m.content };
  if (m.toolCalls.length) message.toolCalls = m.toolCalls;
  if (m.toolCallId) message.toolCallId = m.toolCallId;
  if (m.parts.length) message.parts = m.parts;
  return message;
}

/** What a request used, as the wire has it (every field; none cached when not said). */
const wireUsage = (u: Usage) => ({ promptTokens: u.promptTokens, completionTokens: u.completionTokens, cachedTokens: u.cachedTokens ?? 0 });

/** The agent's reading of a wire message from the relay; `undefined` for one it does not know (ignored). */
export function decodeRelayMessage(message: RelayMessage): RelayToAgent | undefined {
  const body = message.body;
  switch (body?.$case) {
    case "infer": {
      const { requestId, stackId, initialCredit, responseFormat, toolChoice, parallelToolCalls, messages, serviceTier, fairShareKey, ...rest } = body.value;
      // A response format or tool choice this agent does not know is refused by the runtime, never dropped.
      const input: ChatInput = { ...rest, messages: messages.map(chatMessage), ...(responseFormat ? { responseFormat: responseFormat as ResponseFormat } : {}) };
      // A tier this agent does not know is served as `default`; the turn's key is an id, cut to an id's length.
      if (isServiceTier(serviceTier)) input.serviceTier = serviceTier;
      if (fairShareKey) input.fairShareKey = fairShareKey.slice(0, FAIR_SHARE_KEY_MAX);
      if (toolChoice) input.toolChoice = toolChoice as ToolChoice;
      if (parallelToolCalls !== undefined) input.parallelToolCalls = parallelToolCalls;
      return { type: "infer", requestId, stackId, credit: initialCredit, input };
    }
    case "credit":
      return { type: "credit", requestId: body.value.requestId, credits: body.value.credits };
    case "cancel":
      return { type: "cancel", requestId: body.value.requestId, reason: body.value.reason };
    case "cancelCommand":
      return { type: "cancelCommand", commandId: body.value.commandId, reason: body.value.reason };
    case "welcome":
      return { type: "welcome", ...body.value };
    case "command": {
      const { commandId, stackId, step } = body.value;
      const decoded = ((): DeployStep | undefined => {
        switch (step?.$case) {
          case "installRuntime":
            return { kind: "installRuntime", runtime: step.value.runtime };
          case "pullModel":
            return { kind: "pullModel", ...step.value };
          case "configureEndpoint":
            return { kind: "configureEndpoint", ...step.value };
          case "removeStack":
            return { kind: "removeStack" };
          case "checkModel":
            return { kind: "checkModel", ref: step.value.ref, runtime: step.value.runtime };
          case "loadModel":
            return { kind: "loadModel", load: step.value.load };
          case "readLog":
            return { kind: "readLog", after: step.value.after, limit: step.value.limit };
          case undefined:
            return undefined;
        }
      })();
      return decoded && { type: "command", commandId, stackId, step: decoded };
    }
    case undefined:
      return undefined;
  }
}

/** The wire form of a message to the relay. */
export function encodeAgentMessage(message: AgentToRelay): AgentMessage {
  switch (message.type) {
    case "text":
      return { body: { $case: "inferenceChunk", value: { requestId: message.requestId, text: message.text, toolCall: undefined, embedding: undefined, score: undefined } } };
    case "toolCall": {
      const { requestId, index, id, name, arguments: args } = message;
      return { body: { $case: "inferenceChunk", value: { requestId, text: "", toolCall: { index, id, name, arguments: args }, embedding: undefined, score: undefined } } };
    }
    case "embedding":
      return { body: { $case: "inferenceChunk", value: { requestId: message.requestId, text: "", toolCall: undefined, embedding: { index: message.index, values: message.values }, score: undefined } } };
    case "score":
      return { body: { $case: "inferenceChunk", value: { requestId: message.requestId, text: "", toolCall: undefined, embedding: undefined, score: { index: message.index, relevanceScore: message.score } } } };
    case "end":
      return { body: { $case: "inferenceEnd", value: { requestId: message.requestId, outcome: { $case: "done", value: { finishReason: message.finishReason } }, usage: wireUsage(message.usage) } } };
    case "failed":
      return { body: { $case: "inferenceEnd", value: { requestId: message.requestId, outcome: { $case: "error", value: message.error }, usage: wireUsage(message.usage) } } };
    case "hello":
      return { body: { $case: "hello", value: { protocolVersion: message.protocolVersion, agentVersion: message.agentVersion, hardware: message.hardware } } };
    case "heartbeat":
      return { body: { $case: "heartbeat", value: { sentAtMs: message.sentAtMs } } };
    case "progress":
      return { body: { $case: "progress", value: { commandId: message.commandId, ...message.progress } } };
    case "result":
      return { body: { $case: "commandResult", value: { commandId: message.commandId, error: undefined, ...message.result } } };
    case "stepFailed":
      return { body: { $case: "commandResult", value: { commandId: message.commandId, error: message.error, ...EMPTY_STEP_RESULT } } };
    case "hardware":
      return { body: { $case: "hardware", value: message.hardware } };
    case "runtimeState":
      return { body: { $case: "runtimeState", value: { stackId: message.stackId, state: message.state, error: message.error, reason: message.reason ?? "", loadMs: message.loadMs ?? 0, contextSize: message.contextSize ?? 0 } } };
    case "inventory":
      return { body: { $case: "inventory", value: message.inventory } };
    case "metrics":
      return { body: { $case: "metrics", value: { stacks: message.stacks } } };
    case "load":
      return { body: { $case: "load", value: message.load } };
  }
}
