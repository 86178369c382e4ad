import type { Argv, CommandModule } from "yargs";
import type { LoggedRequest, RequestDetail } from "../../../relay/admin-contract/index.js";
import { adminCall, adminExport } from "../../admin-client.js";
import { print, table } from "../../output.js";
import { adminOptions, target, when, type AdminArgs } from "./common.js";

const ms = (n: number | null) => (n === null ? "-" : `${n} ms`);
const keyOf = (r: LoggedRequest) => r.key_name ?? r.key_id ?? "-";

/** The request log's filters, which `list` and `export` share. */
const filters = <T>(b: Argv<T>) =>
  b
    .option("org", { type: "string", demandOption: true })
    .option("stack", { type: "string", describe: "Only this stack's (its id)" })
    .option("key", { type: "string", describe: "Only this key's (its id)" })
    .option("model", { type: "string", describe: "Only requests for this model id" })
    .option("status", { type: "string", describe: "ok, error, 2xx, 4xx, 5xx, or one HTTP status (429)" })
    .option("q", { type: "string", describe: "A request id, or part of a model's name" })
    .option("api", { type: "string", describe: "Only this API's: chat/completions, embeddings, responses, messages, messages/count_tokens, rerank" })
    .option("service-tier", { type: "string", describe: "Only those served at this service tier: priority, default, flex" });

/** What the filters gave. */
type FilterArgs = AdminArgs & { org: string; stack?: string; key?: string; model?: string; status?: string; q?: string; api?: string; serviceTier?: string };

/** The filters as the admin API's query takes them (the relay checks their values). */
const filterQuery = (a: FilterArgs) => ({ org: a.org, stack: a.stack, key: a.key, model: a.model, status: a.status as never, q: a.q, api: a.api as never, service_tier: a.serviceTier as never });

export const requestCommand: CommandModule = {
  command: "request <command>",
  describe: "Read an organization's request log (the gateway's requests, refused ones too)",
  builder: (y) =>
    y
      .command({
        command: "list",
        describe: "List an organization's requests, newest first",
        builder: (b) =>
          adminOptions(
            filters(b)
              .option("page", { type: "number", default: 1 })
              .option("per-page", { type: "number", default: 50, describe: "Requests per page (1 to 500)" }),
          ),
        handler: async (argv) => {
          const a = argv as unknown as FilterArgs & { page: number; perPage: number };
          const page = await adminCall(target(a), "GET /admin/v1/requests", { query: { ...filterQuery(a), page: a.page, per_page: a.perPage } });
          print(a, page, () => {
            const rows = table(
              ["WHEN", "API", "TIER", "STATUS", "ERROR", "KEY", "MODEL", "TOKENS IN/OUT", "LATENCY", "FIRST TOKEN", "ID"],
              page.data.map((r) => [when(r.at), r.api || "-", r.service_tier || "-", String(r.status), r.error_code ?? "-", keyOf(r), r.model || "-", `${r.prompt_tokens}/${r.completion_tokens}`, ms(r.latency_ms), ms(r.first_token_ms), r.id]),
            );
            const shown = (page.page - 1) * page.per_page + page.data.length;
            return shown < page.total ? `${rows}\n${shown} of ${page.total}. More: --page ${page.page + 1}` : rows;
          });
        },
      })
      .command({
        command: "get <id>",
        describe: "One request, with its prompt and answer if its stack captured them (admins)",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const r: RequestDetail = await adminCall(target(a), "GET /admin/v1/requests/:id", { params: { id: a.id } });
          print(a, r, () =>
            [
              `${when(r.at)}  ${r.status}${r.error_code ? ` ${r.error_code}` : ""}  ${r.model || "-"}${r.stream ? " (streamed)" : ""}`,
              `key ${keyOf(r)}  stack ${r.stack_name ?? r.stack_id ?? "-"}  machine ${r.machine_id ?? "-"}  request id ${r.request_id}`,
              `tier ${r.service_tier || "-"}  tokens ${r.prompt_tokens} in${r.cached_tokens ? ` (${r.cached_tokens} cached)` : ""}, ${r.completion_tokens} out  latency ${ms(r.latency_ms)}  first token ${ms(r.first_token_ms)}`,
              ...(r.capture
                ? ["", "Prompt:", typeof r.capture.messages === "string" ? r.capture.messages : JSON.stringify(r.capture.messages, null, 2), "", "Answer:", r.capture.answer, ...r.capture.tool_calls.map((c) => `tool call ${c.name}(${c.arguments})`), ...(r.capture.truncated ? ["(cut to 64 KiB)"] : [])]
                : [r.captured ? "(captured: only admins read it)" : "(no prompt or answer kept: the stack does not capture)"]),
            ].join("\n"),
          );
        },
      })
      .command({
        command: "export",
        describe: "Write an organization's requests as CSV to stdout, newest first (the same filters as list)",
        builder: (b) =>
          adminOptions(filters(b)),
        handler: async (argv) => {
          await adminExport(target(argv as unknown as FilterArgs), "GET /admin/v1/requests.csv", filterQuery(argv as unknown as FilterArgs), process.stdout);
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
