import { z } from "zod";
import { answer, route } from "./route.js";
import { orgRef } from "./fields.js";
import type { RuntimeKind, StackState } from "./stacks.js";
import type { MachineState } from "./machines.js";

/** A stack as a form names it: what a picker, a filter or a key's restrictions show. */
export interface StackChoice {
  id: string;
  name: string;
  model_id: string;
  machine_id: string;
  runtime: RuntimeKind;
  state: StackState;
}

/** A machine as a form names it. */
export interface MachineChoice {
  id: string;
  name: string;
  state: MachineState;
  /** Revoked machines stay nameable (a key may still name one), and are marked. */
  revoked: boolean;
}

/** Every stack and machine of an organization by name, oldest first: what forms choose from, in one light answer. */
export interface Choices {
  object: "choices";
  stacks: StackChoice[];
  machines: MachineChoice[];
}

export const CHOICE_ROUTES = {
  /**
   * The organization's stacks and machines by name (anyone of it), without what their own lists carry
   * (compatibility, deployments, hardware): what a key's restrictions, a filter or a picker needs, for 1,000 stacks
   * at the cost of a few.
   */
  "GET /admin/v1/choices": route({ query: z.strictObject({ org: orgRef() }), response: answer<Choices>() }),
} as const;
