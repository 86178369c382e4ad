/**
 * Calls a relay's admin API with its admin token: `/admin/v1` + `path`, a JSON body when given; the status and the
 * parsed answer. `relay` is read at each call (a test starts it in `beforeAll`).
 */
export function adminApi(relay: () => { adminUrl: string; adminToken: string | null }) {
  return async <T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const { adminUrl, adminToken } = relay();
    const res = await fetch(`${adminUrl}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  };
}
