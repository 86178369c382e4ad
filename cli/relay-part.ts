import { CliError } from "./cli-error.js";

/**
 * Loads the relay's code for `makina relay` and `makina up`. The agent package that a relay serves to the
 * machines joining it leaves the relay out; there these commands say so instead of failing on a missing module.
 */
export async function loadRelayPart<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND" && /[\\/]relay[\\/]index\.js/.test((err as Error).message)) {
      throw new CliError("This is the agent package (makina-agent): it runs this machine's agent, not a relay. A relay comes with the full makina package (see the README).");
    }
    throw err;
  }
}
