import { MakinaError, type MachineLog } from "../../proto/index.js";
import type { Actor } from "../auth/index.js";
import { hashSecret, newSecret } from "../keys/index.js";
import { checkMachineCredentials, isLinkAddress } from "../link/index.js";
import type { Machine } from "../store/index.js";
import { given, type ControlContext, type Given } from "./control-context.js";

/** What it takes to join a machine: its token (shown once), the install command, the address agents dial and the CA they pin. */
export interface Joining {
  token: string;
  /** The one line that joins the machine (it asks for the token on the machine's terminal), or null when none is safe. */
  installCommand: string | null;
  /** Why there is no install command, and how to have one; null when there is one. */
  installRefused: string | null;
  server: string;
  caSha256: string | null;
  /** Why the install command works on this computer only, and what to change; null when it reaches beyond it. */
  reachWarning: string | null;
}

const target = (m: { id: string; name: string }) => ({ kind: "machine", id: m.id, name: m.name });

/** Machines: listed by anyone of the organization; added, renamed, revoked, given new tokens and deleted by its admins. */
export class Machines {
  constructor(private readonly c: ControlContext) {}

  /** The organization's machines. */
  async list(actor: Actor, orgRef: string | null | undefined): Promise<Machine[]> {
    return this.c.store.machines.listByOrg(this.c.policy(actor).org(orgRef).id);
  }

  /** The machine `id`, if the actor sees it (not found when it is another organization's). */
  async get(actor: Actor, id: string): Promise<Machine> {
    return this.c.machine(this.c.policy(actor).orgScope, id);
  }

  /**
   * The last lines of a machine's agent log (admins), after line `after`, read over its link wherever it is
   * linked: `machine_offline` when it is not linked now (a revoked one never is).
   */
  async log(actor: Actor, id: string, after: number, limit: number): Promise<MachineLog> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("read a machine's log");
    const machine = await this.c.machine(policy.orgScope, id);
    if (machine.revokedAt !== null) throw new MakinaError("machine_offline", "This machine is revoked: it never links again, and its log is not read.");
    return this.c.deps.readLog(machine.id, "", after, limit);
  }

  /** Registers a machine of the organization: its token is in the answer only. */
  async create(actor: Actor, input: Given<{ org?: string | null; name: string }>): Promise<{ machine: Machine } & Joining> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("add machines");
    const { org: orgRef, name } = given(input);
    const org = policy.org(orgRef);
    const token = newSecret("mk_mach_");
    const machine = await this.c.store.machines.create({ orgId: org.id, name, tokenHash: hashSecret(token) });
    this.c.events.emit({ type: "machine", orgId: org.id, machineId: machine.id });
    await this.c.record(actor, { orgId: machine.orgId, action: "machine.created", target: target(machine) });
    return { machine, ...(await this.joining(machine.id, token)) };
  }

  /**
   * Revokes a machine: its link is dropped at once, its token stops working, and it cannot connect again.
   * Its stacks' requests get 503 `machine_offline`. Final: add the machine again to use it.
   */
  async revoke(actor: Actor, id: string): Promise<Machine> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("revoke machines");
    const machine = await this.revokeUnrecorded(policy.orgScope, id);
    await this.c.record(actor, { orgId: machine.orgId, action: "machine.revoked", target: target(machine) });
    return machine;
  }

  /** Renames a machine. */
  async rename(actor: Actor, id: string, input: Given<{ name: string }>): Promise<Machine> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("rename machines");
    const before = await this.c.machine(policy.orgScope, id);
    const { name } = given(input);
    await this.c.store.machines.rename(before.id, name);
    this.c.events.emit({ type: "machine", orgId: before.orgId, machineId: before.id });
    const machine = await this.c.machine(policy.orgScope, id);
    await this.c.record(actor, { orgId: machine.orgId, action: "machine.renamed", target: target(machine), detail: { from: before.name } });
    return machine;
  }

  /**
   * Deletes a machine that never joined (pending) or is revoked, once no stack names it. A pending one is revoked
   * first, so its token cannot join it while it goes. 409 `conflict` for a machine that joined and is not
   * revoked, or that stacks still name.
   */
  async delete(actor: Actor, id: string): Promise<Machine> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("delete machines");
    const machine = await this.c.machine(policy.orgScope, id);
    if (!machine.revokedAt && machine.state !== "pending") {
      throw new MakinaError("conflict", `The machine '${machine.name}' has joined: revoke it first, then delete it.`, { param: "machine" });
    }
    const stacksOn = async () => (await this.c.store.stacks.listByMachine(machine.id)).map((s) => s.name);
    const inUse = (names: string[]) => new MakinaError("conflict", `Stacks still name the machine '${machine.name}' (${names.join(", ")}): delete them first.`, { param: "machine" });
    const named = await stacksOn();
    if (named.length > 0) throw inUse(named);
    if (!machine.revokedAt) await this.revokeUnrecorded(policy.orgScope, id);
    // The delete itself refuses when a stack was made on the machine meanwhile.
    if (!(await this.c.store.machines.delete(machine.id))) {
      if (await this.c.store.machines.get(machine.id)) throw inUse(await stacksOn());
      throw new MakinaError("not_found", `No machine '${id}'.`, { param: "machine" });
    }
    this.c.events.emit({ type: "machine", orgId: machine.orgId, machineId: machine.id });
    await this.c.record(actor, { orgId: machine.orgId, action: "machine.deleted", target: target(machine) });
    return machine;
  }

  /** Gives a machine a new token (shown once); the old one stops working and the live link is dropped. */
  async rotateToken(actor: Actor, id: string): Promise<{ machine: Machine } & Joining> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("rotate machine tokens");
    const found = await this.c.machine(policy.orgScope, id);
    if (found.revokedAt) throw new MakinaError("conflict", `The machine '${id}' is revoked; add it again instead.`, { param: "machine" });
    const token = newSecret("mk_mach_");
    await this.c.store.machines.setTokenHash(found.id, hashSecret(token));
    this.c.deps.dropLink(found.id);
    this.c.events.emit({ type: "machine", orgId: found.orgId, machineId: found.id });
    const machine = await this.c.machine(policy.orgScope, id);
    await this.c.record(actor, { orgId: machine.orgId, action: "machine.token_rotated", target: target(machine) });
    return { machine, ...(await this.joining(machine.id, token)) };
  }

  /** Whether the link would take these credentials (the install script asks before installing anything; no caller is known). */
  checkToken(machineId: string, token: string): ReturnType<typeof checkMachineCredentials> {
    return checkMachineCredentials(this.c.store, machineId, token);
  }

  private async revokeUnrecorded(orgId: string | null, id: string): Promise<Machine> {
    const machine = await this.c.machine(orgId, id);
    await this.c.store.machines.revoke(machine.id, hashSecret(newSecret("mk_mach_")));
    this.c.deps.dropLink(machine.id);
    this.c.events.emit({ type: "machine", orgId: machine.orgId, machineId: machine.id });
    return this.c.machine(orgId, id);
  }

  /** What a machine needs to join: the address agents dial, the CA they pin, and the install command with its token. */
  private async joining(machineId: string, token: string): Promise<Joining> {
    const { address: server, tls, caSha256, relayUrl, install, otherAddresses, reach } = this.c.deps.link();
    // Read now, not from a cache: a relay started a moment ago is in the command.
    const others = otherAddresses ? await otherAddresses().catch(() => []) : [];
    const trust = caSha256 ? ` --ca-sha256 ${caSha256}` : tls ? " --tls" : "";
    // Every relay on the database, this one first: the agent fails over between them.
    // Another relay's loopback address reaches nothing from a worker machine (unless this one is on loopback too).
    const loopback = (a: string) => /^(127\.|localhost:|\[::1\]:)/.test(a);
    // What another relay wrote in the database is printed only when it is a plain host:port (a database writer
    // could otherwise put a command into the line a person runs as root).
    const reachable = others.filter((a) => a !== server && isLinkAddress(a) && (loopback(server) || !loopback(a)));
    const servers = [server, ...reachable].map((a) => ` --server ${a}`).join("");
    // One line for a bare machine with Node: the relay serves the script and the agent package of its own version,
    // and the script checks with the relay, before it installs anything, that it answers and takes the token.
    // With TLS on the link, all of it comes over TLS from the install listener, whose key the line pins (curl
    // checks it before sending anything: `-k` only lets a certificate of the relay's own CA through). The line
    // holds no token: the script asks for it on the machine's terminal, so it is in no shell history and no
    // process's arguments. A plain-HTTP URL beyond loopback would carry the script and the token in the clear:
    // no line is printed then, saying why and how to have one.
    const plainBeyondLoopback = !install && !relayUrl.startsWith("https://") && !/^http:\/\/(127\.|localhost(:|$)|\[::1\])/.test(relayUrl);
    if (plainBeyondLoopback) {
      const installRefused = `No install command: this relay serves the install script over plain HTTP (${relayUrl}), so the script and this machine's token would cross the network in the clear. Turn TLS on for the agents' link (--grpc-tls on, the default when it listens beyond loopback), or serve the relay over HTTPS (--tls-cert and --tls-key, or a proxy with --public-url https://…), then rotate this machine's token for a command.`;
      return { token, installCommand: null, installRefused, server, caSha256, reachWarning: null };
    }
    const installCommand = install
      ? `curl -fsSLk --pinnedpubkey ${install.pin} ${install.url}/install.sh | sh -s -- --relay-url ${install.url} --pinned-pubkey ${install.pin}${servers} --machine-id ${machineId}${trust}`
      : `curl -fsSL ${relayUrl}/install.sh | sh -s -- --relay-url ${relayUrl}${servers} --machine-id ${machineId}${trust}`;
    return { token, installCommand, installRefused: null, server, caSha256, reachWarning: reach ?? null };
  }
}
