import { checkForLeaks } from "./helpers/leak-check.js";

// Every test file: nothing it started is left open at its end (see leak-check.ts).
checkForLeaks();
