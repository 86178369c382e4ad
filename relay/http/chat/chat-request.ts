import type { PlannableRequest } from "../../routing/index.js";

/**
 * A checked chat request, in the gateway's terms: what routing and the answer read, and the `input` the stack's
 * runtime gets, built once by {@link checkChatRequest} and carried to the agent as it is. Every API's decoder
 * (chat completions, Messages, Responses) makes one.
 */
export interface ChatRequest extends PlannableRequest {
  /** What the stack's runtime must honour (`tools`, `response_format`, `image_url`…), each named as `paramName` says. */
  needs: string[];
  /** Whether a streamed answer ends with its usage (`stream_options.include_usage`; the other APIs always say it). */
  includeUsage: boolean;
}
