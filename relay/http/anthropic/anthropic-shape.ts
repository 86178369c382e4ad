import { anthropicError } from "../../../proto/index.js";
import type { ErrorShape } from "../send-json.js";

/** Anthropic's error envelope, with its status for the error (529 for a machine or runtime that cannot take the request). */
export const anthropicShape: ErrorShape = (e) => {
  const { status, type } = anthropicError(e.mapping);
  return { status, body: { type: "error", error: { type, message: e.message } } };
};
