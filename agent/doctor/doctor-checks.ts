import type { AgentStatus } from "../control/agent-status.js";

/** One line of `makina doctor`. */
export interface DoctorCheck {
  name: string;
  level: "ok" | "warn" | "fail";
  detail: string;
  /** What to do about a warn or fail. */
  hint?: string;
}

/** What the CLI could learn when the daemon does not answer. */
export interface OfflineFacts {
  /** Where the CLI looked for the agent. */
  socketPaths: string[];
  /** The agent config file found, if any, and what is wrong with it. */
  configFile?: string;
  configProblems?: string[];
  server?: string;
  /** Whether a TCP connection to the relay address succeeded. */
  relayReachable?: boolean;
}

const GiB = 2 ** 30;
const gib = (n: number) => `${(n / GiB).toFixed(1)} GiB`;

/** The checks of `makina doctor`, from the running agent's status or, when it is down, from what the CLI found. */
export function doctorChecks(status: AgentStatus | null, offline: OfflineFacts): DoctorCheck[] {
  if (!status) return offlineChecks(offline);
  const checks: DoctorCheck[] = [
    { name: "daemon running", level: "ok", detail: `pid ${status.pid}, agent ${status.agentVersion}, up since ${new Date(status.startedAt).toISOString()}` },
    { name: "config readable", level: "ok", detail: `machine ${status.machineId}, relay ${status.server}` },
  ];
  const link = status.link;
  if (link.state === "online") {
    checks.push({ name: "relay reachable", level: "ok", detail: `linked to ${status.server} since ${new Date(link.onlineSince ?? Date.now()).toISOString()}` });
    checks.push({ name: "machine token accepted", level: "ok", detail: "the relay accepted this machine" });
  } else if (link.credentialsRejected) {
    checks.push({ name: "relay reachable", level: "ok", detail: `${status.server} answers` });
    checks.push({
      name: "machine token accepted",
      level: "fail",
      detail: `the relay rejected machine ${status.machineId}: ${link.lastError ?? "unauthenticated"}`,
      hint: "The machine ID or token is wrong or the machine was deleted: create a machine with `makina admin machine create` and run the install command it prints.",
    });
  } else {
    checks.push({
      name: "relay reachable",
      level: "fail",
      detail: `not linked to ${status.server} (${link.state}): ${link.lastError ?? "no answer yet"}`,
      hint: `Check that the relay runs and that ${status.server} is reachable from this machine (address, firewall, port).`,
    });
    checks.push({ name: "machine token accepted", level: "warn", detail: "unknown until the relay answers" });
  }

  const failed = status.runtimes.filter((r) => r.state === "failed");
  const loading = status.runtimes.filter((r) => r.state === "loading");
  if (failed.length) {
    checks.push({
      name: "runtimes healthy",
      level: "fail",
      detail: failed.map((r) => `${r.modelId} (${r.runtime}): ${r.error ?? "failed"}`).join("; "),
      hint: "See `makina runtime list` and the agent's log; redeploy the stack once the cause is fixed.",
    });
  } else if (loading.length) {
    checks.push({ name: "runtimes healthy", level: "warn", detail: `${loading.map((r) => r.modelId).join(", ")} still loading` });
  } else {
    checks.push({ name: "runtimes healthy", level: "ok", detail: status.runtimes.length ? `${status.runtimes.length} ready` : "none deployed yet" });
  }

  if (!status.disk) checks.push({ name: "disk space", level: "warn", detail: `cannot read free space of ${status.dataDir}` });
  else if (status.disk.freeBytes < GiB)
    checks.push({ name: "disk space", level: "fail", detail: `${gib(status.disk.freeBytes)} free on ${status.disk.path}`, hint: "Free some space: models need room to download." });
  else if (status.disk.freeBytes < 10 * GiB)
    checks.push({ name: "disk space", level: "warn", detail: `${gib(status.disk.freeBytes)} free on ${status.disk.path}`, hint: "Larger models may not fit." });
  else checks.push({ name: "disk space", level: "ok", detail: `${gib(status.disk.freeBytes)} free on ${status.disk.path}` });

  checks.push(gpuCheck(status));
  if (status.hardwareProblems.length) checks.push({ name: "hardware probes", level: "warn", detail: status.hardwareProblems.join("; ") });
  return checks;
}

function gpuCheck(status: AgentStatus): DoctorCheck {
  const { gpus, platform, arch } = status.hardware;
  const acc = status.accelerators;
  const nvidia = gpus.filter((g) => /nvidia/i.test(g.vendor));
  const amd = gpus.filter((g) => /amd|advanced micro/i.test(g.vendor));
  if (nvidia.length && !acc.includes("cuda") && !acc.includes("vulkan")) {
    return {
      name: "GPU detection",
      level: "fail",
      detail: `${nvidia.map((g) => g.model).join(", ")} present, but neither CUDA nor Vulkan is usable`,
      hint: "The GPU's driver is missing or too old: install the NVIDIA driver (nvidia-smi should work), then restart the agent.",
    };
  }
  if (amd.length && !acc.includes("vulkan")) {
    return { name: "GPU detection", level: "warn", detail: `${amd.map((g) => g.model).join(", ")} present, but Vulkan is not usable`, hint: "Install the Vulkan driver (mesa-vulkan-drivers) to use the GPU." };
  }
  if (platform === "darwin" && arch === "arm64" && !acc.includes("metal")) {
    return { name: "GPU detection", level: "warn", detail: "Apple silicon, but Metal is not usable", hint: "Update macOS; Metal ships with it." };
  }
  if (acc.length) return { name: "GPU detection", level: "ok", detail: `${gpus.map((g) => g.model).join(", ") || "GPU"} via ${acc.join(", ")}` };
  return { name: "GPU detection", level: "ok", detail: gpus.length ? `${gpus.map((g) => g.model).join(", ")} (not used for inference): CPU inference` : "no GPU: CPU inference" };
}

function offlineChecks(f: OfflineFacts): DoctorCheck[] {
  const checks: DoctorCheck[] = [
    {
      name: "daemon running",
      level: "fail",
      detail: `no agent answers on ${f.socketPaths.join(" or ")}`,
      hint: "Start it: `systemctl start makina-agent`, or `makina agent --config FILE` in the foreground (or `makina up`). Pass --socket if it uses another socket.",
    },
  ];
  if (!f.configFile) checks.push({ name: "config readable", level: "fail", detail: "no agent config found", hint: "Run the install command from the relay's Machines page (or `makina admin machine create`), or pass --config FILE." });
  else if (f.configProblems?.length) checks.push({ name: "config readable", level: "fail", detail: `${f.configFile}: ${f.configProblems.join("; ")}`, hint: "Fix the file, or run the install command again." });
  else checks.push({ name: "config readable", level: "ok", detail: f.configFile });
  if (f.server && f.relayReachable !== undefined) {
    checks.push(
      f.relayReachable
        ? { name: "relay reachable", level: "ok", detail: `${f.server} accepts connections` }
        : { name: "relay reachable", level: "fail", detail: `cannot connect to ${f.server}`, hint: "Check the relay address, that the relay runs, and the firewall." },
    );
  }
  return checks;
}
