import { useApp } from "../app-context.js";
import type { Choices } from "./types.js";
import { useLive, type Live } from "./use-live.js";

/** The organization's stacks and machines by name (one light call), read again as they change: what forms and filters choose from. */
export function useChoices(): Live<Choices> & { stackName: (id: string) => string; machineName: (id: string) => string } {
  const { client } = useApp();
  const choices = useLive(() => client.call("GET /admin/v1/choices"), ["stack", "machine"], []);
  const stacks = new Map((choices.data?.stacks ?? []).map((s) => [s.id, s.name]));
  const machines = new Map((choices.data?.machines ?? []).map((m) => [m.id, m.name]));
  return { ...choices, stackName: (id) => stacks.get(id) ?? id, machineName: (id) => machines.get(id) ?? id };
}
