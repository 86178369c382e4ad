export { RequestLedger, type ClosedResponse, type LedgerBooks, type LedgerClock, type TokenCount } from "./request-ledger.js";
