import { randomBytes } from "node:crypto";
import { MakinaError } from "../../proto/index.js";
import { hashPassword, hashSecret, hashesEqual, verifyPassword } from "../keys/index.js";
import type { Store, User } from "../store/index.js";
import { HashSlots } from "./hash-slots.js";
import { SignInGuard, type SignInTicket } from "./sign-in-guard.js";

/** A signed-in user and the CSRF token of its session. */
export interface SessionUser {
  user: User;
  csrfToken: string;
  /** Hash of the session cookie, to end this session. */
  sessionHash: string;
}

/** What a sign-in came to: a session (with its cookie value), or a refusal and why. */
export type SignInResult =
  | { ok: true; session: SessionUser & { cookie: string; expiresAt: number } }
  | { ok: false; reason: "unknown login" | "wrong password" | "disabled"; user: User | undefined };

/** Options of {@link WebSessions}. */
export interface WebSessionsOptions {
  /** How long a session lasts after sign-in. @default 604800000 (7 days) */
  ttlMs?: number;
  /** Which sign-ins may be tried now (see {@link SignInGuard} for the defaults). */
  guard?: SignInGuard;
  /** Password hashes at once for the whole relay, and in line. @default 2 and 64 */
  hashSlots?: HashSlots;
  now?: () => number;
}

const token = () => randomBytes(32).toString("base64url");

/**
 * Sign-in for the web application: passwords checked against scrypt hashes off the event loop (a few at once
 * for the whole relay), sessions stored by the hash of their cookie value, each with a CSRF token, failed
 * sign-ins throttled by {@link SignInGuard} so that guessing is slow and the right user is never locked out.
 */
export class WebSessions {
  private readonly guard: SignInGuard;
  private readonly hashSlots: HashSlots;
  private readonly ttlMs: number;
  private readonly now: () => number;
  // A hash to verify against when the login does not exist, so a missing login costs as much as a wrong password.
  private decoyHash: Promise<string> | undefined;
  private readonly endedListeners = new Set<(sessionHash: string) => void>();
  private readonly userListeners = new Set<(userId: string) => void>();

  constructor(
    private readonly store: Store,
    options: WebSessionsOptions = {},
  ) {
    this.guard = options.guard ?? new SignInGuard(store.signIns);
    this.hashSlots = options.hashSlots ?? new HashSlots();
    this.ttlMs = options.ttlMs ?? 7 * 24 * 3600_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * Checks a login and password (both given: the admin contract requires them); on success opens a session and
   * returns its cookie value. A refusal says why (for the audit log, never for the caller) and whose login it was,
   * if any; the caller is told only that the login or password is not right (or, knowing the password, that the
   * account is disabled).
   */
  async signIn(login: string, password: string, address: string): Promise<SignInResult> {
    const ticket = await this.begin(login, address);
    let found: Awaited<ReturnType<Store["users"]["findByLogin"]>>;
    let ok: boolean | null = null;
    try {
      found = await this.store.users.findByLogin(login);
      const stored = found?.passwordHash ?? (await (this.decoyHash ??= hashPassword(token())));
      // From an address this login signed in from: the known line, which a flood from fresh addresses cannot fill.
      ok = (await this.hashSlots.run(() => verifyPassword(password, stored), ticket.known)) && found !== undefined;
    } finally {
      await this.guard.finish(ticket, ok, found?.id);
    }
    const withoutHash = (u: NonNullable<typeof found>): User => {
      const { passwordHash: _hash, ...user } = u;
      return user;
    };
    if (!ok || !found) return { ok: false, reason: found ? "wrong password" : "unknown login", user: found && withoutHash(found) };
    // Told only to whoever knows the password.
    if (found.disabledAt !== null) return { ok: false, reason: "disabled", user: withoutHash(found) };
    return { ok: true, session: await this.open(withoutHash(found)) };
  }

  /**
   * Opens a session for a user whose identity was checked another way (its organization's identity provider),
   * lasting `ttlMs` at most (the relay's session length by default).
   */
  async open(user: User, ttlMs = this.ttlMs): Promise<SessionUser & { cookie: string; expiresAt: number }> {
    const cookie = token();
    const csrfToken = token();
    const now = this.now();
    const sessionHash = hashSecret(cookie);
    // Sessions nobody signed out of are swept here, so the table holds live sessions only.
    await this.store.sessions.deleteExpired(now);
    const expiresAt = now + Math.min(ttlMs, this.ttlMs);
    await this.store.sessions.create(sessionHash, { userId: user.id, csrfToken, createdAt: now, expiresAt });
    return { user, csrfToken, sessionHash, cookie, expiresAt };
  }

  /** The user of a session cookie, or undefined when it is unknown, expired or its user is gone. */
  async resolve(cookie: string | undefined): Promise<SessionUser | undefined> {
    if (!cookie) return undefined;
    const sessionHash = hashSecret(cookie);
    const session = await this.store.sessions.find(sessionHash, this.now());
    const user = session && (await this.store.users.get(session.userId));
    return session && user && user.disabledAt === null ? { user, csrfToken: session.csrfToken, sessionHash } : undefined;
  }

  /** True when `sent` is this session's CSRF token (compared in constant time). */
  csrfMatches(session: SessionUser, sent: string | undefined): boolean {
    return sent !== undefined && sent !== "" && hashesEqual(hashSecret(sent), hashSecret(session.csrfToken));
  }

  async signOut(session: SessionUser): Promise<void> {
    await this.store.sessions.delete(session.sessionHash);
    this.ended([session.sessionHash]);
  }

  /** A ticket to check a password for `login` from `address`, or 429 `sign_in_throttled` saying how long to wait. */
  private async begin(login: string, address: string): Promise<SignInTicket> {
    const started = await this.guard.begin(login, address);
    if ("waitMs" in started) {
      throw new MakinaError("sign_in_throttled", `Too many failed sign-ins. Try again in ${Math.ceil(started.waitMs / 1000)} seconds.`, { retryAfterMs: started.waitMs });
    }
    return started;
  }

  /** Whether a session still holds: not signed out or expired, its user still there and enabled. */
  async isLive(sessionHash: string): Promise<boolean> {
    const session = await this.store.sessions.find(sessionHash, this.now());
    const user = session && (await this.store.users.get(session.userId));
    return user !== undefined && user.disabledAt === null;
  }

  /**
   * Ends every session of a user at once (it was disabled, re-roled, given a new password or deleted), and its
   * event streams on this relay. Other relays end theirs when the change reaches them.
   */
  async endUser(userId: string): Promise<void> {
    this.ended(await this.store.sessions.deleteForUser(userId));
    this.userChanged(userId);
  }

  /** A user's sessions were ended elsewhere (another relay): its event streams on this relay end. */
  userChanged(userId: string): void {
    for (const listener of this.userListeners) listener(userId);
  }

  /** Calls `listener` with each user whose sessions ended at once; returns how to stop. */
  onUserEnded(listener: (userId: string) => void): () => void {
    this.userListeners.add(listener);
    return () => this.userListeners.delete(listener);
  }

  /** Calls `listener` with sessions this relay ended (signed out, or ended by a password change); returns how to stop. */
  onEnded(listener: (sessionHash: string) => void): () => void {
    this.endedListeners.add(listener);
    return () => this.endedListeners.delete(listener);
  }

  private ended(sessionHashes: string[]): void {
    for (const hash of sessionHashes) for (const listener of this.endedListeners) listener(hash);
  }

  /**
   * Changes the signed-in user's password (the new one checked by the admin contract's rule); every other session
   * of that user ends. The current password is throttled as a sign-in is (by the session's address): a stolen
   * session cannot guess it quickly.
   */
  async changePassword(session: SessionUser, current: string, next: string, address: string): Promise<void> {
    const ticket = await this.begin(session.user.login, address);
    let found: Awaited<ReturnType<Store["users"]["findByLogin"]>>;
    let ok: boolean | null = null;
    try {
      found = await this.store.users.findByLogin(session.user.login);
      ok = found !== undefined && (await this.hashSlots.run(() => verifyPassword(current, found!.passwordHash), true));
    } finally {
      await this.guard.finish(ticket, ok, found?.id);
    }
    if (!ok || !found) throw new MakinaError("invalid_credentials", "The current password is not right.", { param: "current_password" });
    await this.store.users.setPasswordHash(found.id, await this.hashSlots.run(() => hashPassword(next), true));
    this.ended(await this.store.sessions.deleteForUser(found.id, session.sessionHash));
  }
}
