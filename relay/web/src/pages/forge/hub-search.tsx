import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { HubFile, HubRepo, HubRepoFiles, RuntimeKind } from "../../api/types.js";
import { useApp } from "../../app-context.js";
import { formatBytes } from "../../components/format.js";

/** A file's verdict for the machine chosen, in the compatibility panel's words. */
function verdictText(f: HubFile): string {
  const c = f.compatibility;
  if (!c) return "—";
  if (c.ok === true) return "Fits";
  if (c.ok === null) return "Not known yet";
  return c.checks.find((k) => k.level === "fail")?.message ?? "Does not fit";
}

/**
 * The Forge's search of the model hub: repositories by text (the runtimes each suits), and for GGUF a repository's
 * files, each judged for the machine chosen and across the organization's machines. Choosing one fills the model.
 */
export function HubSearch({ runtime, machine, onPick }: { runtime: RuntimeKind; machine: string; onPick: (model: string) => void }) {
  const { client, session } = useApp();
  const [q, setQ] = useState("");
  const [repos, setRepos] = useState<HubRepo[] | null>(null);
  const [files, setFiles] = useState<HubRepoFiles | null>(null);
  const [state, setState] = useState<{ busy: boolean; error: string | null }>({ busy: false, error: null });
  const run = <T,>(call: Promise<T>, then: (v: T) => void) => {
    setState({ busy: true, error: null });
    call.then(
      (v) => (then(v), setState({ busy: false, error: null })),
      (e: ApiError) => setState({ busy: false, error: e.message }),
    );
  };
  const search = (e: Event) => {
    e.preventDefault();
    if (!q.trim()) return;
    // The results of the search before are not this one's: gone while it runs, and when it fails.
    setFiles(null);
    setRepos(null);
    run(client.call("GET /admin/v1/hub/search", { query: { org: session.org.id, q: q.trim() } }), (l) => setRepos(l.data));
  };
  const open = (id: string) => {
    const [owner = "", name = ""] = id.split("/");
    run(client.call("GET /admin/v1/hub/repos/:owner/:name", { params: { owner, name }, query: { org: session.org.id, ...(machine && { machine }) } }), setFiles);
  };
  return (
    <div class="hub-search" data-testid="hub-search">
      <form class="hub-form" onSubmit={search} role="search">
        <label for="hub-q">Search the hub</label>
        <input id="hub-q" type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} placeholder="e.g. qwen2.5 gguf" />
        <button type="submit" class="button secondary" disabled={state.busy}>
          Search
        </button>
      </form>
      {state.error && (
        <p class="notice error" role="alert">
          {state.error}
        </p>
      )}
      {files ? (
        <div>
          <p>
            <button type="button" class="link-button" onClick={() => setFiles(null)}>
              ← Results
            </button>{" "}
            <strong>{files.repo.id}</strong>
          </p>
          <ul class="hub-list" data-testid="hub-files">
            {files.files.length === 0 && <li class="muted">No GGUF file in this repository.</li>}
            {files.files.map((f) => (
              <li key={f.path}>
                <div>
                  <strong>{f.path}</strong>
                  <div class="muted small">
                    {f.quantization ?? "—"} · {formatBytes(f.size_bytes)}
                    {f.parts > 1 ? ` in ${f.parts} parts` : ""} · fits on {f.fits.machines} of {f.fits.of} machines
                  </div>
                  {f.compatibility && <div class="small">This machine: {verdictText(f)}</div>}
                </div>
                <button type="button" class="button small secondary" onClick={() => onPick(f.model)} aria-label={`Use ${f.path}`}>
                  Use
                </button>
              </li>
            ))}
          </ul>
        </div>
      ) : (
        repos && (
          <ul class="hub-list" data-testid="hub-repos">
            {repos.length === 0 && <li class="muted">Nothing on the hub matches.</li>}
            {repos.map((r) => (
              <li key={r.id}>
                {runtime === "gguf" ? (
                  <button type="button" class="link-button" onClick={() => open(r.id)} disabled={!r.runtimes.includes("gguf")}>
                    {r.id}
                  </button>
                ) : (
                  <button type="button" class="link-button" onClick={() => onPick(r.id)} disabled={!r.runtimes.includes(runtime === "mlx" ? "mlx" : "vllm")}>
                    {r.id}
                  </button>
                )}{" "}
                <span class="muted small">
                  {r.runtimes.join(", ") || "no runtime of ours"} · {r.downloads.toLocaleString("en-US")} downloads{r.license ? ` · ${r.license}` : ""}
                  {r.gated ? " · gated" : ""}
                </span>
              </li>
            ))}
          </ul>
        )
      )}
    </div>
  );
}
