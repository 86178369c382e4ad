import type { RequestHandler } from "express";
import type { Store } from "../../store/index.js";
import { authenticateApiKey } from "../../keys/index.js";

/** Bearer-key authentication of the gateway; the key record lands in `res.locals.apiKey`. */
export function authenticate(store: Store): RequestHandler {
  return (req, res, next) => {
    try {
      res.locals.apiKey = authenticateApiKey(store.keys, req.get("authorization"));
      next();
    } catch (err) {
      next(err);
    }
  };
}
