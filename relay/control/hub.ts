import { MakinaError } from "../../proto/index.js";
import type { Actor } from "../auth/index.js";
import type { HubFile, HubRepo, HubRepoFiles } from "../admin-contract/index.js";
import type { ControlContext } from "./control-context.js";
import type { Stacks } from "./stacks.js";

/** The most GGUF files of a repository judged (a repository of every quantization has 20 to 30). */
const MOST_FILES = 40;
/** The most machines of an organization each file is judged on for "fits on N of M". */
const MOST_MACHINES = 100;

/**
 * The Forge's search of the model hub (`--hf-endpoint`): repositories by text, and a repository's GGUF files, each
 * judged by the compatibility panel's rules (its header read over ranged requests, never the weights) for the
 * machine asked and across the organization's machines. For any member of the organization.
 */
export class Hub {
  constructor(
    private readonly c: ControlContext,
    private readonly stacks: Stacks,
  ) {}

  async search(actor: Actor, orgRef: string | null | undefined, text: string): Promise<HubRepo[]> {
    const org = this.c.policy(actor).org(orgRef);
    return this.client().search(org.id, text);
  }

  async repo(actor: Actor, orgRef: string | null | undefined, id: string, machineRef?: string): Promise<HubRepoFiles> {
    const org = this.c.policy(actor).org(orgRef);
    const chosen = machineRef ? await this.c.machine(org.id, machineRef) : undefined;
    const { repo, files } = await this.client().repo(org.id, id);
    const machines = (await this.c.store.machines.listByOrg(org.id)).slice(0, MOST_MACHINES);
    // Each file judged on every machine at once (the organization's stacks read once a file, its header once).
    const judged = await Promise.all(
      files.slice(0, MOST_FILES).map(async (file): Promise<HubFile> => {
        const model = `hf:${repo.id}/${file.path}`;
        // A split file is named by its first part: the agent pulls every part, and its headers are read together.
        const verdicts = await this.stacks.checkEach(org.id, { runtime: "gguf", model }, machines);
        const compatibility = !chosen ? null : (verdicts[machines.findIndex((m) => m.id === chosen.id)] ?? (await this.stacks.checkEach(org.id, { runtime: "gguf", model }, [chosen]))[0]!);
        return { path: file.path, model, quantization: file.quantization, size_bytes: file.sizeBytes, parts: file.parts, compatibility, fits: { machines: verdicts.filter((v) => v.ok === true).length, of: machines.length } };
      }),
    );
    return { repo, machine: chosen?.id ?? null, files: judged };
  }

  private client() {
    const hub = this.c.deps.hub;
    if (!hub) throw new MakinaError("hub_unavailable", "This relay searches no model hub.", { retryAfterMs: 60_000 });
    return hub;
  }
}

