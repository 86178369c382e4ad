import { describe, expect, it } from "vitest";
import { MAX_CONTEXT, MIN_CONTEXT } from "../../relay/admin-contract/stacks.js";
import { SIZED_CONTEXT } from "../../relay/control/stack-facts.js";
import { CONTEXT_RANGE, SIZED_CONTEXT as FORGE_SIZED_CONTEXT } from "../../relay/web/src/pages/forge/context-bounds.js";

// The web application imports only the contract's types (its schemas stay out of the bundle), so the Forge keeps
// its own copy of the contexts the relay takes: this holds the two together.
describe("the Forge's context field", () => {
  it("offers the contexts the relay takes, for the runtimes it takes them for", () => {
    expect(CONTEXT_RANGE).toEqual({ min: MIN_CONTEXT, max: MAX_CONTEXT });
    expect([...FORGE_SIZED_CONTEXT].sort()).toEqual([...SIZED_CONTEXT].sort());
  });
});
