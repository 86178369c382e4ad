import { operatorActor } from "../../relay/auth/index.js";

/** The relay's operator (the admin token), as tests call the control plane: every organization, no address. */
export const OP = operatorActor();
