/** What this browser keeps for a person's playground of one stack (every tab of it shares one key). */
interface KeptKey {
  key: string;
  /** Milliseconds since the epoch, when the relay stops taking it. */
  expires_at: number;
}

/** How long a playground key works: a day, then the playground makes another (and revokes the old one). */
export const PLAYGROUND_KEY_MS = 24 * 60 * 60 * 1000;
/** A playground key's requests a minute: enough to chat, too few to serve an app with it. */
export const PLAYGROUND_RPM = 60;
/** The name every playground key is made with, followed by its maker's login. */
export const PLAYGROUND_NAME = "playground · ";

const PREFIX = "makina.playground-key.";
const storageKey = (userId: string, stackId: string) => `${PREFIX}${userId}.${stackId}`;

/** The playground key this browser keeps for `userId` on `stackId`, while it works; "" for none. */
export function keptPlaygroundKey(userId: string, stackId: string, now = Date.now()): string {
  try {
    const kept = JSON.parse(localStorage.getItem(storageKey(userId, stackId)) ?? "null") as KeptKey | null;
    return kept && typeof kept.key === "string" && kept.expires_at > now ? kept.key : "";
  } catch {
    return "";
  }
}

/** Keeps (or with "", forgets) the playground key of `userId` on `stackId` for every tab of this browser. */
export function keepPlaygroundKey(userId: string, stackId: string, key: string, expiresAt = Date.now() + PLAYGROUND_KEY_MS): void {
  try {
    if (key) localStorage.setItem(storageKey(userId, stackId), JSON.stringify({ key, expires_at: expiresAt } satisfies KeptKey));
    else localStorage.removeItem(storageKey(userId, stackId));
  } catch {
    // Storage refused (a private window's policy): the key holds for this page only.
  }
}

/** Forgets every playground key this browser keeps (on sign-out: the next person at it does not use them). */
export function forgetPlaygroundKeys(): void {
  try {
    for (const name of Object.keys(localStorage)) if (name.startsWith(PREFIX)) localStorage.removeItem(name);
  } catch {
    // Nothing kept.
  }
}

/** Whether a change of this browser's storage (another tab's) is of this person's playground key on this stack. */
export function isPlaygroundKeyChange(storageName: string | null, userId: string, stackId: string): boolean {
  return storageName === null || storageName === storageKey(userId, stackId);
}
