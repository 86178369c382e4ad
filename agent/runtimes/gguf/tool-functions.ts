import type { ChatModelFunctions, GbnfJsonSchema, Llama } from "node-llama-cpp";
import { MakinaError, type ToolDefinition } from "../../../proto/index.js";
import { refuse, toGrammarSchema } from "./json-schema-grammar.js";

/** Schemas kept converted and checked. */
const KEPT = 64;

/**
 * A request's tools as node-llama-cpp's function definitions, each function's parameters a schema its
 * grammars enforce while the model writes the arguments. A schema the grammar cannot enforce is refused with
 * 400 `invalid_value` naming the tool, before anything is generated; converted schemas are kept (the last
 * 64), as tools come with every request of a conversation.
 */
export class ToolFunctions {
  private readonly bySchema = new Map<string, Promise<GbnfJsonSchema>>();

  constructor(private readonly llama: Llama) {}

  /** The functions the model may call: all of `tools`, or only `only` when it names one. */
  async for(tools: ToolDefinition[], only?: string): Promise<ChatModelFunctions> {
    const functions: Record<string, ChatModelFunctions[string]> = {};
    for (const [i, tool] of tools.entries()) {
      if (only !== undefined && tool.name !== only) continue;
      const params = tool.parametersJson ? await this.params(tool.parametersJson, `tools[${i}].function.parameters`) : undefined;
      functions[tool.name] = { ...(tool.description ? { description: tool.description } : {}), ...(params ? { params } : {}) };
    }
    if (only !== undefined && !functions[only]) throw new MakinaError("invalid_value", `The function '${only}' is not among the request's tools.`, { param: "tool_choice" });
    return functions;
  }

  private params(json: string, param: string): Promise<GbnfJsonSchema> {
    let kept = this.bySchema.get(json);
    if (!kept) {
      kept = (async () => {
        const schema = toGrammarSchema(JSON.parse(json) as unknown, param);
        // Made once here so that a schema the grammar generator cannot take fails now, with its reason.
        await this.llama.createGrammarForJsonSchema(schema as never).catch((err: unknown) => {
          throw refuse(param, (err as Error).message);
        });
        return schema;
      })();
      kept.catch(() => this.bySchema.delete(json));
      if (this.bySchema.size >= KEPT) this.bySchema.delete(this.bySchema.keys().next().value!);
      this.bySchema.set(json, kept);
    }
    return kept;
  }
}
