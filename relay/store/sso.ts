import type { Db } from "./open-database.js";
import type { Row } from "./tables.js";
import { transaction } from "./transaction.js";

/** An organization's single sign-on, as stored (its client secret is sealed in the settings). */
export interface OrgSso {
  orgId: string;
  issuer: string;
  clientId: string;
  /** What the sign-in page's button says: "Sign in with {label}". */
  label: string;
  /** The ID token's claim that lists the person's groups; null: roles are not read from the provider. */
  roleClaim: string | null;
  /** Groups (in `roleClaim`) whose people are admins; everyone else a member. */
  adminGroups: string[];
  /** Who may still sign in with a password: `everyone`, or only `breakGlassLogin` (`break_glass`). */
  passwords: "everyone" | "break_glass";
  breakGlassLogin: string | null;
  updatedAt: number;
}

/** A sign-in under way through a provider. */
export interface SsoFlow {
  orgId: string;
  browserHash: string;
  codeVerifier: string;
  nonce: string;
  redirectUri: string;
  createdAt: number;
}

const toSso = (r: Row<"org_sso">): OrgSso => ({
  orgId: r.org_id,
  issuer: r.issuer,
  clientId: r.client_id,
  label: r.label,
  roleClaim: r.role_claim,
  adminGroups: JSON.parse(r.admin_groups_json) as string[],
  passwords: r.passwords,
  breakGlassLogin: r.break_glass_login,
  updatedAt: Number(r.updated_at),
});

/** Organizations' single sign-on, the sign-ins under way, and who signs in as which subject. */
export class SsoStore {
  constructor(private readonly db: Db) {}

  async get(orgId: string): Promise<OrgSso | undefined> {
    const row = await this.db.selectFrom("org_sso").selectAll().where("org_id", "=", orgId).executeTakeFirst();
    return row && toSso(row);
  }

  async list(): Promise<OrgSso[]> {
    return (await this.db.selectFrom("org_sso").selectAll().orderBy("label").execute()).map(toSso);
  }

  async put(sso: OrgSso): Promise<void> {
    const values = {
      org_id: sso.orgId,
      issuer: sso.issuer,
      client_id: sso.clientId,
      label: sso.label,
      role_claim: sso.roleClaim,
      admin_groups_json: JSON.stringify(sso.adminGroups),
      passwords: sso.passwords,
      break_glass_login: sso.breakGlassLogin,
      updated_at: sso.updatedAt,
    };
    const { org_id: _id, ...rest } = values;
    await this.db.insertInto("org_sso").values(values).onConflict((oc) => oc.column("org_id").doUpdateSet(rest)).execute();
  }

  async delete(orgId: string): Promise<void> {
    await this.db.deleteFrom("org_sso").where("org_id", "=", orgId).execute();
  }

  /**
   * Keeps a sign-in under way. An organization keeps its `most` newest (a flood of starts drops the oldest, never
   * refuses the next person's); flows nobody finished are swept after 10 minutes, long enough for any provider's page.
   */
  async startFlow(stateHash: string, flow: SsoFlow, most = 10_000): Promise<void> {
    await this.db.deleteFrom("sso_flows").where("created_at", "<", flow.createdAt - 600_000).execute();
    const under = await this.db.selectFrom("sso_flows").select((eb) => eb.fn.countAll<number>().as("n")).where("org_id", "=", flow.orgId).executeTakeFirst();
    if (Number(under?.n ?? 0) >= most) {
      const oldest = this.db.selectFrom("sso_flows").select("state_hash").where("org_id", "=", flow.orgId).orderBy("created_at").limit(Math.max(1, Number(under?.n ?? 0) - most + 1));
      await this.db.deleteFrom("sso_flows").where("state_hash", "in", oldest).execute();
    }
    await this.db
      .insertInto("sso_flows")
      .values({ state_hash: stateHash, org_id: flow.orgId, browser_hash: flow.browserHash, code_verifier: flow.codeVerifier, nonce: flow.nonce, redirect_uri: flow.redirectUri, created_at: flow.createdAt })
      .execute();
  }

  /** The flow of a state, taken (deleted) so that it serves once; undefined when there is none (or it was used). */
  async takeFlow(stateHash: string): Promise<SsoFlow | undefined> {
    return transaction(this.db, async (trx) => {
      const row = await trx.selectFrom("sso_flows").selectAll().where("state_hash", "=", stateHash).executeTakeFirst();
      if (!row) return undefined;
      const gone = await trx.deleteFrom("sso_flows").where("state_hash", "=", stateHash).executeTakeFirst();
      if (Number(gone.numDeletedRows) !== 1) return undefined;
      return { orgId: row.org_id, browserHash: row.browser_hash, codeVerifier: row.code_verifier, nonce: row.nonce, redirectUri: row.redirect_uri, createdAt: Number(row.created_at) };
    });
  }

  /** The user of an organization who signs in as `subject`, if any. */
  async userIdOf(orgId: string, subject: string): Promise<string | undefined> {
    const row = await this.db.selectFrom("users").select("id").where("org_id", "=", orgId).where("sso_subject", "=", subject).executeTakeFirst();
    return row?.id;
  }

  async setSubject(userId: string, subject: string): Promise<void> {
    await this.db.updateTable("users").set({ sso_subject: subject }).where("id", "=", userId).execute();
  }
}
