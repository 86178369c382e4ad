import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { AdminClient } from "./api/admin-client.js";
import type { RelayEvents } from "./api/event-stream.js";
import type { SessionInfo } from "./api/types.js";

/** What every page needs: the API client, the live event stream, the signed-in session, navigation, toasts. */
export interface AppContextValue {
  client: AdminClient;
  events: RelayEvents;
  session: SessionInfo;
  navigate: (path: string) => void;
  signOut: () => void;
  /** Says in a toast that an action was done ("Key revoked."). */
  notify: (text: string) => void;
}

export const AppContext = createContext<AppContextValue | null>(null);

export function useApp(): AppContextValue {
  const value = useContext(AppContext);
  if (!value) throw new Error("useApp outside the signed-in application");
  return value;
}

/** True when the signed-in user administers the organization. */
export function useIsAdmin(): boolean {
  return useApp().session.user.role === "admin";
}
