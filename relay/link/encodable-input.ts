import { MakinaError, type ChatInput } from "../../proto/index.js";

/**
 * A message whose numbers do not fit the link's types cannot be encoded, and grpc-js ends the whole
 * link when a write fails to encode: such a request is refused alone, before it is sent.
 */
export function assertEncodable(call: ChatInput): void {
  const uint32 = (v: number, param: string) => {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new MakinaError("invalid_value", `'${param}' is out of range: ${v}.`, { param });
  };
  uint32(call.maxTokens, "max_tokens");
  if (call.seed !== undefined) uint32(call.seed, "seed");
}
