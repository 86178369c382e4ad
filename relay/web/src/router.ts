/** The web application's pages, by path. */
export type Route =
  | { page: "overview" }
  | { page: "machines" }
  | { page: "machine"; id: string }
  | { page: "stacks" }
  | { page: "stack"; id: string }
  | { page: "stack-edit"; id: string }
  | { page: "forge" }
  | { page: "keys" }
  | { page: "usage" }
  | { page: "users" }
  | { page: "audit" }
  | { page: "alerts" }
  | { page: "requests" }
  | { page: "request"; id: string }
  | { page: "account" }
  | { page: "not-found" };

/** Reads a path such as `/stacks/stk_123` (a query after it is left to the page). */
export function parseRoute(path: string): Route {
  // A link may carry a query (`/requests?key=…`): the page reads it; the route is the path's.
  const parts = path.replace(/[?#].*$/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const [first, second] = parts;
  if (parts.length === 0) return { page: "overview" };
  if (first === "machines" && parts.length <= 2) return second ? { page: "machine", id: second } : { page: "machines" };
  if (first === "stacks" && parts.length === 3 && parts[2] === "edit") return { page: "stack-edit", id: second! };
  if (first === "stacks" && parts.length <= 2) return second ? { page: "stack", id: second } : { page: "stacks" };
  if (first === "requests" && parts.length <= 2) return second ? { page: "request", id: second } : { page: "requests" };
  if (parts.length === 1 && (first === "forge" || first === "keys" || first === "usage" || first === "users" || first === "audit" || first === "alerts" || first === "account")) return { page: first };
  return { page: "not-found" };
}
