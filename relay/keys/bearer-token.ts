/** The token of an `Authorization: Bearer <token>` header (any case, surrounding spaces allowed); undefined for anything else. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return authorization === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
}
